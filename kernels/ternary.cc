// CPU ternary kernels: loops over groups of 8 elements (one packed group of w
// bytes each) around the shared per-element inlines of ternary.h.
#include "kernels/ternary.h"

#include <algorithm>
#include <type_traits>

#include "kernels/cpu_isa.h"
#include "kernels/ternary_simd.h"

namespace sieve::kernels {

namespace {

constexpr int kGroup = 8;

template <typename T>
void PackT(const T* work, size_t elems, int w, uint8_t* wire) {
  int32_t v[kGroup];
  for (size_t i = 0; i < elems; i += kGroup) {
    int cnt = static_cast<int>(std::min<size_t>(kGroup, elems - i));
    for (int k = 0; k < cnt; ++k) v[k] = work[i + k];
    TernaryPackGroup(v, cnt, w, wire + (i / kGroup) * w);
  }
}

template <typename T>
void UnpackT(const uint8_t* wire, size_t elems, int w, bool accumulate, T* work) {
  int32_t v[kGroup];
  for (size_t i = 0; i < elems; i += kGroup) {
    int cnt = static_cast<int>(std::min<size_t>(kGroup, elems - i));
    TernaryUnpackGroup(wire + (i / kGroup) * w, cnt, w, v);
    if (accumulate) {
      for (int k = 0; k < cnt; ++k) work[i + k] = static_cast<T>(work[i + k] + v[k]);
    } else {
      for (int k = 0; k < cnt; ++k) work[i + k] = static_cast<T>(v[k]);
    }
  }
}

// Element j of the vector being quantized: in[j], or in[idx[j]] under a mask.
template <typename L>
inline float LoadAt(const void* in, const uint32_t* idx, uint64_t j) {
  return L::Load(in, idx != nullptr ? idx[j] : j);
}

template <typename L>
void AbsMaxT(const void* in, const uint32_t* idx, size_t count, size_t block, float* scales) {
  for (size_t b = 0, begin = 0; begin < count; ++b, begin += block) {
    size_t end = std::min(count, begin + block);
    float m = 0.0f;
    for (size_t j = begin; j < end; ++j) {
      float a = fabsf(LoadAt<L>(in, idx, j));
      m = a > m ? a : m;
    }
    scales[b] = m;
  }
}

constexpr int kBatch = 256;                  // elements per quantization batch (32 groups)
constexpr int kBatchQuads = kBatch / 4 + 1;  // an unaligned batch touches one more quad

// words[4*l + i] = word i of quad q0 + l, l < nquads (portable: the lanes are
// independent, so the compiler may vectorize the rounds across quads).
void PhiloxQuadsPortable(const PhiloxStream& rng, uint64_t q0, int nquads, uint32_t* words) {
  uint32_t c0[kBatchQuads], c1[kBatchQuads], c2[kBatchQuads], c3[kBatchQuads];
  for (int l = 0; l < nquads; ++l) {
    c0[l] = static_cast<uint32_t>(q0 + static_cast<uint64_t>(l));
    c1[l] = rng.rank;
    c2[l] = static_cast<uint32_t>(rng.step);
    c3[l] = static_cast<uint32_t>(rng.step >> 32);
  }
  uint32_t k0 = static_cast<uint32_t>(rng.seed), k1 = static_cast<uint32_t>(rng.seed >> 32);
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      k0 += 0x9E3779B9u;
      k1 += 0xBB67AE85u;
    }
    for (int l = 0; l < nquads; ++l) {
      uint64_t p0 = uint64_t{0xD2511F53u} * c0[l], p1 = uint64_t{0xCD9E8D57u} * c2[l];
      uint32_t n0 = static_cast<uint32_t>(p1 >> 32) ^ c1[l] ^ k0;
      uint32_t n2 = static_cast<uint32_t>(p0 >> 32) ^ c3[l] ^ k1;
      c0[l] = n0;
      c1[l] = static_cast<uint32_t>(p1);
      c2[l] = n2;
      c3[l] = static_cast<uint32_t>(p0);
    }
  }
  for (int l = 0; l < nquads; ++l) {
    words[4 * l] = c0[l];
    words[4 * l + 1] = c1[l];
    words[4 * l + 2] = c2[l];
    words[4 * l + 3] = c3[l];
  }
}

// The Philox words of quads q0 .. q0+nquads-1, eight at a time when wide.
void PhiloxQuads(bool wide, const PhiloxStream& rng, uint64_t q0, int nquads, uint32_t* words) {
  if (!wide) return PhiloxQuadsPortable(rng, q0, nquads, words);
  const int vec = nquads & ~7;
  if (ActiveCpuIsa() >= CpuIsa::kAvx512) {
    simd::PhiloxQuadsAvx512(rng, q0, vec, words);
  } else {
    simd::PhiloxQuadsAvx2(rng, q0, vec, words);
  }
  for (int l = vec; l < nquads; ++l) {
    Philox4 r = PhiloxQuad(rng, q0 + static_cast<uint64_t>(l));
    for (int i = 0; i < 4; ++i) words[4 * l + i] = r.v[i];
  }
}

// q[i] for elements j0 .. j0+cnt-1 (cnt <= kBatch): TernaryQuantizeRun's
// results, with the Philox rounds batched and one scale per run of a block.
template <typename L>
void QuantizeBatch(const void* in, const uint32_t* idx, uint64_t j0, int cnt, size_t block,
                   const float* scales, const PhiloxStream& rng, bool wide, int32_t* q) {
  uint32_t words[4 * kBatchQuads];
  const int nquads = static_cast<int>(((j0 + static_cast<uint64_t>(cnt) - 1) >> 2) - (j0 >> 2)) + 1;
  PhiloxQuads(wide, rng, j0 >> 2, nquads, words);
  const uint32_t* w = words + (j0 & 3);
  // The wide path wants float32 in a row: read it in place or stage it here.
  alignas(32) float staged[kBatch];
  const float* g = staged;
  if (wide) {
    if (std::is_same<L, TernaryF32>::value && idx == nullptr) {
      g = static_cast<const float*>(in) + j0;
    } else {
      for (int k = 0; k < cnt; ++k) staged[k] = LoadAt<L>(in, idx, j0 + k);
    }
  }
  for (int i = 0; i < cnt;) {
    const uint64_t j = j0 + static_cast<uint64_t>(i);
    const float s = scales[j / block];
    // The run of elements in the same scale block: one scale, a vectorizable loop.
    const int run = static_cast<int>(std::min<uint64_t>(cnt - i, block - j % block));
    if (wide) {
      simd::TernaryQuantizeRunAvx2(g + i, w + i, run, s, q + i);
    } else {
      for (int k = i; k < i + run; ++k)
        q[k] = TernaryQuantizeOne(LoadAt<L>(in, idx, j0 + k), s, w[k]);
    }
    i += run;
  }
}

bool Wide() { return ActiveCpuIsa() >= CpuIsa::kAvx2; }

template <typename L>
void QuantizePackT(const void* in, const uint32_t* idx, size_t offset, size_t elems,
                   size_t block, const float* scales, const PhiloxStream& rng, int w,
                   uint8_t* wire) {
  const bool wide = Wide();
  alignas(32) int32_t q[kBatch];
  for (size_t i = 0; i < elems; i += kBatch) {
    int cnt = static_cast<int>(std::min<size_t>(kBatch, elems - i));
    QuantizeBatch<L>(in, idx, offset + i, cnt, block, scales, rng, wide, q);
    int g = 0;
    if (wide && w == 2) {  // whole groups straight from the lane masks
      g = cnt & ~(kGroup - 1);
      simd::TernaryPack2Avx2(q, g, wire + (i / kGroup) * w);
    }
    for (; g < cnt; g += kGroup)
      TernaryPackGroup(q + g, std::min(kGroup, cnt - g), w, wire + ((i + g) / kGroup) * w);
  }
}

template <typename L, typename T>
void QuantizeAddT(const void* in, const uint32_t* idx, size_t offset, size_t elems, size_t block,
                  const float* scales, const PhiloxStream& rng, const uint8_t* wire, int w,
                  T* work) {
  const bool wide = Wide();
  alignas(32) int32_t q[kBatch];
  int32_t v[kBatch] = {};
  for (size_t i = 0; i < elems; i += kBatch) {
    int cnt = static_cast<int>(std::min<size_t>(kBatch, elems - i));
    QuantizeBatch<L>(in, idx, offset + i, cnt, block, scales, rng, wide, q);
    if (wire != nullptr) {
      for (int g = 0; g < cnt; g += kGroup)
        TernaryUnpackGroup(wire + ((i + g) / kGroup) * w, std::min(kGroup, cnt - g), w, v + g);
    }
    for (int k = 0; k < cnt; ++k) work[i + k] = static_cast<T>(q[k] + v[k]);
  }
}

template <typename L, typename T>
void DequantizeT(const T* sums, size_t offset, size_t elems, size_t block, const float* scales,
                 int divisor, void* out) {
  for (size_t i = 0; i < elems;) {
    const size_t j = offset + i;
    const float s = scales[j / block];
    const size_t end = std::min(elems, i + (block - j % block));
    for (; i < end; ++i) L::Store(out, i, TernaryDequantizeOne(sums[i], s, divisor));
  }
}

// Walks the bitmap over [begin, end) a word at a time: full words dequantize in
// a row, empty words zero-fill, mixed words zero then fill their set bits.
template <typename L, typename T>
void DequantizeScatterT(const T* sums, size_t offset, size_t block, const float* scales,
                        int divisor, const uint64_t* bits, size_t begin, size_t end, void* out) {
  size_t k = 0;
  size_t kb = offset / block, left = block - offset % block;  // scale block of sums[k]
  auto next = [&]() {
    float v = TernaryDequantizeOne(sums[k++], scales[kb], divisor);
    if (--left == 0) ++kb, left = block;
    return v;
  };
  for (size_t j = begin; j < end;) {
    const size_t base = j & ~size_t{63}, stop = std::min(end, base + 64);
    uint64_t word = bits[base / 64] >> (j - base);
    const size_t m = stop - j;
    if (m < 64) word &= (uint64_t{1} << m) - 1;
    if (m == 64 && word == ~uint64_t{0}) {
      for (size_t i = 0; i < 64; ++i) L::Store(out, j + i, next());
    } else {
      for (size_t i = 0; i < m; ++i) L::Store(out, j + i, 0.0f);
      for (; word != 0; word &= word - 1) L::Store(out, j + __builtin_ctzll(word), next());
    }
    j = stop;
  }
}

// Calls fn(L{}) with the loader of a floating dtype.
template <typename Fn>
void WithLoader(DType dtype, Fn&& fn) {
  if (dtype == DType::kFloat16) {
    fn(TernaryF16{});
  } else if (dtype == DType::kBfloat16) {
    fn(TernaryBf16{});
  } else {
    fn(TernaryF32{});
  }
}

// Calls fn(T{}) with the integer type of wt.
template <typename Fn>
void WithWork(TernaryWork wt, Fn&& fn) {
  if (wt == TernaryWork::kInt8) {
    fn(int8_t{});
  } else if (wt == TernaryWork::kInt16) {
    fn(int16_t{});
  } else {
    fn(int32_t{});
  }
}

}  // namespace

TernaryWork TernaryWorkFor(int nranks) {
  if (nranks <= 127) return TernaryWork::kInt8;
  return nranks <= 32767 ? TernaryWork::kInt16 : TernaryWork::kInt32;
}

void TernaryAbsMax(DType dtype, const void* in, const uint32_t* idx, size_t count, size_t block,
                   float* scales) {
  WithLoader(dtype, [&](auto l) { AbsMaxT<decltype(l)>(in, idx, count, block, scales); });
}

void TernaryQuantizePack(DType dtype, const void* in, const uint32_t* idx, size_t offset,
                         size_t elems, size_t block, const float* scales, const PhiloxStream& rng,
                         int w, void* wire) {
  WithLoader(dtype, [&](auto l) {
    QuantizePackT<decltype(l)>(in, idx, offset, elems, block, scales, rng, w,
                               static_cast<uint8_t*>(wire));
  });
}

void TernaryQuantizeAdd(DType dtype, const void* in, const uint32_t* idx, size_t offset,
                        size_t elems, size_t block, const float* scales, const PhiloxStream& rng,
                        const void* wire, int w, TernaryWork wt, void* work) {
  WithLoader(dtype, [&](auto l) {
    WithWork(wt, [&](auto t) {
      using T = decltype(t);
      QuantizeAddT<decltype(l), T>(in, idx, offset, elems, block, scales, rng,
                                   static_cast<const uint8_t*>(wire), w, static_cast<T*>(work));
    });
  });
}

void TernaryPack(TernaryWork wt, const void* work, size_t elems, int w, void* wire) {
  WithWork(wt, [&](auto t) {
    using T = decltype(t);
    PackT(static_cast<const T*>(work), elems, w, static_cast<uint8_t*>(wire));
  });
}

void TernaryUnpack(TernaryWork wt, const void* wire, size_t elems, int w, bool accumulate,
                   void* work) {
  WithWork(wt, [&](auto t) {
    using T = decltype(t);
    UnpackT(static_cast<const uint8_t*>(wire), elems, w, accumulate, static_cast<T*>(work));
  });
}

void TernaryDequantizeRange(DType dtype, TernaryWork wt, const void* sums, size_t offset,
                            size_t elems, size_t block, const float* scales, int divisor,
                            void* out) {
  WithLoader(dtype, [&](auto l) {
    WithWork(wt, [&](auto t) {
      using T = decltype(t);
      DequantizeT<decltype(l), T>(static_cast<const T*>(sums), offset, elems, block, scales,
                                  divisor, out);
    });
  });
}

void TernaryDequantizeScatter(DType dtype, TernaryWork wt, const void* sums, size_t offset,
                              size_t block, const float* scales, int divisor,
                              const uint64_t* bits, size_t begin, size_t end, void* out) {
  WithLoader(dtype, [&](auto l) {
    WithWork(wt, [&](auto t) {
      using T = decltype(t);
      DequantizeScatterT<decltype(l), T>(static_cast<const T*>(sums), offset, block, scales,
                                         divisor, bits, begin, end, out);
    });
  });
}

}  // namespace sieve::kernels
