// CPU ternary kernels: dispatch to the AVX-512 / AVX2 entry points
// (ternary_avx512.cc, ternary_avx2.cc) or the portable policy below, all
// running the loops of ternary_batch.h; plus the element-by-element forms for
// what those do not cover (int16/int32 work, widths past 8 bits, 2-bit
// quantization into other widths), around the shared inlines of ternary.h.
#include "kernels/ternary.h"

#include <algorithm>
#include <cstring>
#include <type_traits>
#include <utility>
#include <vector>

#include "kernels/cpu_isa.h"
#include "kernels/ternary_batch.h"
#include "kernels/ternary_feedback.h"
#include "kernels/ternary_simd.h"

namespace sieve::kernels {

namespace {

constexpr int kGroup = 8;

// ---- The portable policy of ternary_batch.h: plain loops, written so the compiler can
// vectorize them (per-element flags as bytes, one scale per loop where the batch has one,
// codes as arithmetic): the policy of every CPU without AVX2.
struct PortableOps {
  // Masks without a division (ternary_batch.h): none here.
  static constexpr bool kReciprocalMasks = false;
  // PhiloxOct of octs oct0 .. oct0 + 8N - 1 as 8N lanes, round by round, so the compiler
  // vectorizes the 32x32->64-bit products: the bits of PhiloxFromHead (philox.h).
  template <int N>
  SIEVE_TK_INLINE static void PhiloxLanes(const PhiloxStream& rng, uint64_t oct0, uint32_t* words) {
    constexpr int kLanes = 8 * N;
    const PhiloxHead head = PhiloxHeadOf(rng);
    uint32_t c0[kLanes], c1[kLanes], c2[kLanes], c3[kLanes];
    for (int l = 0; l < kLanes; ++l) {
      const Philox4 w =
          PhiloxHeadRounds(head, static_cast<uint32_t>(oct0 + static_cast<uint64_t>(l)));
      c0[l] = w.v[0], c1[l] = w.v[1], c2[l] = w.v[2], c3[l] = w.v[3];
    }
    uint32_t k0 = head.k0, k1 = head.k1;
    for (int round = 0; round < kPhiloxTailRounds; ++round) {
      if (round > 0) {
        k0 += kPhiloxBump0;
        k1 += kPhiloxBump1;
      }
      for (int l = 0; l < kLanes; ++l) PhiloxRound(c0[l], c1[l], c2[l], c3[l], k0, k1);
    }
    for (int l = 0; l < kLanes; ++l) {
      words[4 * l + 0] = c0[l], words[4 * l + 1] = c1[l];
      words[4 * l + 2] = c2[l], words[4 * l + 3] = c3[l];
    }
  }
  SIEVE_TK_INLINE static void Philox8(const PhiloxStream& rng, uint64_t oct0, uint32_t* words) {
    PhiloxLanes<1>(rng, oct0, words);
  }
  SIEVE_TK_INLINE static void Philox32(const PhiloxStream& rng, uint64_t oct0, uint32_t* words) {
    PhiloxLanes<4>(rng, oct0, words);
  }
  template <class L>
  SIEVE_TK_INLINE static void Stage(const TernarySource& src, uint64_t j0, int n, float* g,
                                    float* sum) {
    batch::StageScalar<L>(src, j0, 0, n, g, sum);
  }
  SIEVE_TK_INLINE static void Masks(const float* g, const float* sc, float s, const uint16_t* h,
                                    int n64, uint64_t* keep, uint64_t* neg, uint64_t* maybe) {
    // Per chunk: the three conditions as 0/1 bytes in loops the compiler vectorizes, then
    // eight bytes to eight bits at a time (PackFlags); maybe = h < x exactly.
    for (int c = 0; c < n64; ++c) {
      alignas(64) uint8_t kf[64], nf[64], lf[64];
      // One scale for the chunk or one per element, as in MasksFeedback.
      if (sc == nullptr)
        MaskChunk(
            g + 64 * c, [s](int) { return s; }, h + 64 * c, kf, nf, lf);
      else
        MaskChunk(
            g + 64 * c, [sc, c](int e) { return sc[64 * c + e]; }, h + 64 * c, kf, nf, lf);
      keep[c] = PackFlags(kf), neg[c] = PackFlags(nf), maybe[c] = PackFlags(lf);
    }
  }
  // 64 elements' flags (keep, negative, h < x) as 0/1 bytes.
  template <class Scale>
  SIEVE_TK_INLINE static void MaskChunk(const float* g, Scale scale, const uint16_t* h, uint8_t* kf,
                                        uint8_t* nf, uint8_t* lf) {
    for (int e = 0; e < 64; ++e) {
      const float x = TernaryLevel(g[e], scale(e)), hf = static_cast<float>(h[e]);
      kf[e] = TernaryKeepCoarse(x, hf), lf[e] = hf < x, nf[e] = g[e] < 0.0f;
    }
  }
  // The code of bit e of a chunk's keep and neg words: TernaryCode as arithmetic.
  SIEVE_TK_INLINE static int32_t CodeOf(uint64_t keep, uint64_t neg, int e) {
    const int32_t kb = static_cast<int32_t>((keep >> e) & 1),
                  nb = static_cast<int32_t>((neg >> e) & 1);
    return kb - 2 * (kb & nb);
  }
  // 64 bytes of 0 or 1 to the bits of a word (byte e -> bit e): eight bytes at a time, the
  // multiply gathering the low bit of each byte into the top byte.
  SIEVE_TK_INLINE static uint64_t PackFlags(const uint8_t* f) {
    uint64_t bits = 0;
    for (int b = 0; b < 8; ++b) {
      uint64_t v;
      std::memcpy(&v, f + 8 * b, 8);
      bits |= ((v * 0x0102040810204080ull) >> 56) << (8 * b);
    }
    return bits;
  }
  SIEVE_TK_INLINE static void Wire2(const uint64_t* keep, const uint64_t* neg, int n64,
                                    uint8_t* out) {
    batch::Wire2BySpread(keep, neg, n64, out);
  }
  SIEVE_TK_INLINE static void LevelsCodes(const float* g, const float* sc, float s, float lv,
                                          int levels, const uint16_t* h, int n64, int8_t* q,
                                          uint64_t* tie) {
    batch::LevelsCodesPortable(g, sc, s, lv, levels, h, n64, q, tie);
  }
  SIEVE_TK_INLINE static void Codes(const uint64_t* keep, const uint64_t* neg, int n64,
                                    int8_t* q) {
    for (int c = 0; c < n64; ++c)
      for (int e = 0; e < 64; ++e) q[64 * c + e] = static_cast<int8_t>(CodeOf(keep[c], neg[c], e));
  }
  SIEVE_TK_INLINE static void AddUnpack(const uint8_t* wire, int w, int n64, bool accumulate,
                                        int8_t* work) {
    int32_t v[kGroup];
    for (int g = 0; g < 8 * n64; ++g) {
      TernaryUnpackGroup(wire + g * w, kGroup, w, v);
      for (int k = 0; k < kGroup; ++k)
        work[8 * g + k] = static_cast<int8_t>((accumulate ? work[8 * g + k] : 0) + v[k]);
    }
  }
  SIEVE_TK_INLINE static void Residual(const float* sum, const float* sc, float s,
                                       const uint64_t* keep, const uint64_t* neg, int n64,
                                       float* res) {
    for (int c = 0; c < n64; ++c)
      for (int e = 0; e < 64; ++e) {
        const int i = 64 * c + e;
        res[i] =
            TernaryFeedbackResidual(sum[i], sc != nullptr ? sc[i] : s, CodeOf(keep[c], neg[c], e));
      }
  }
  template <class L>
  SIEVE_TK_INLINE static void MasksFeedback(const void* data, float* res, uint64_t j0,
                                            const float* sc, float s, const uint16_t* h, int n64,
                                            uint64_t* keep, uint64_t* neg, uint64_t* maybe) {
    for (int c = 0; c < n64; ++c) {
      alignas(64) uint8_t kf[64], nf[64], lf[64];
      float* r = res + j0 + static_cast<uint64_t>(64 * c);
      const uint64_t first = j0 + static_cast<uint64_t>(64 * c);
      // One scale for the chunk or one per element: the loop-invariant scale lets the
      // compiler vectorize the division (no division by a lane's s <= 0 to speculate).
      if (sc == nullptr)
        FeedbackChunk<L>(
            data, first, r, [s](int) { return s; }, h + 64 * c, kf, nf, lf);
      else
        FeedbackChunk<L>(
            data, first, r, [sc, c](int e) { return sc[64 * c + e]; }, h + 64 * c, kf, nf, lf);
      keep[c] = PackFlags(kf), neg[c] = PackFlags(nf), maybe[c] = PackFlags(lf);
    }
  }
  // 64 elements from `first`: the sums g + e_prev, their flags (keep, negative, h < x) as
  // 0/1 bytes and the residuals (TernaryCode as arithmetic: the same q), branch-free.
  template <class L, class Scale>
  SIEVE_TK_INLINE static void FeedbackChunk(const void* data, uint64_t first, float* r, Scale scale,
                                            const uint16_t* h, uint8_t* kf, uint8_t* nf,
                                            uint8_t* lf) {
    for (int e = 0; e < 64; ++e) {
      const float sum = TernaryFeedbackSum<L>(data, first + static_cast<uint64_t>(e), r[e]);
      const float g = L::Round(sum), si = scale(e);
      const float x = TernaryLevel(g, si), hf = static_cast<float>(h[e]);
      const bool kb = TernaryKeepCoarse(x, hf), nb = g < 0.0f;
      kf[e] = kb, lf[e] = hf < x, nf[e] = nb;
      const int32_t q = static_cast<int32_t>(kb) * (1 - 2 * static_cast<int32_t>(nb));
      r[e] = TernaryFeedbackResidual(sum, si, q);
    }
  }
  SIEVE_TK_INLINE static void MaxMagnitude(const float* g, int n, uint32_t* m) {
    uint32_t v = *m;
    for (int k = 0; k < n; ++k) v = std::max(v, TernaryMagnitudeBits(g[k]));
    *m = v;
  }
};

// ---- Whole groups at a width known at compile time (int16/int32 work, the int8
// widths the wide paths do not take): a group of 8 is W bytes, built in one
// 128-bit word and copied (little-endian hosts: the image's byte order).
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "the group word is copied as bytes");
constexpr int kMaxFixedBits = 16;

template <int W, typename T>
void PackGroupsW(const T* work, size_t groups, uint8_t* wire) {
  constexpr uint64_t kMask = (uint64_t{1} << W) - 1;
  for (size_t g = 0; g < groups; ++g) {
    unsigned __int128 acc = 0;
    for (int k = 0; k < kGroup; ++k)
      acc |= static_cast<unsigned __int128>(
                 static_cast<uint64_t>(static_cast<uint32_t>(work[kGroup * g + k])) & kMask)
             << (k * W);
    std::memcpy(wire + g * W, &acc, W);
  }
}

template <int W, typename T>
void UnpackGroupsW(const uint8_t* wire, size_t groups, bool accumulate, T* work) {
  constexpr uint32_t kMask = static_cast<uint32_t>((uint64_t{1} << W) - 1);
  for (size_t g = 0; g < groups; ++g) {
    unsigned __int128 acc = 0;
    std::memcpy(&acc, wire + g * W, W);
    T* out = work + kGroup * g;
    for (int k = 0; k < kGroup; ++k) {
      const uint32_t raw = static_cast<uint32_t>(acc >> (k * W)) & kMask;
      const int32_t v = static_cast<int32_t>(raw << (32 - W)) >> (32 - W);
      out[k] = static_cast<T>(accumulate ? out[k] + v : v);
    }
  }
}

// Calls fn(std::integral_constant<int, w>) for 1 <= w <= kMaxFixedBits; false otherwise.
template <typename Fn, int... Ws>
bool WithFixedBits(int w, Fn&& fn, std::integer_sequence<int, Ws...>) {
  bool done = false;
  ((w == Ws + 1 ? (fn(std::integral_constant<int, Ws + 1>{}), done = true) : false), ...);
  return done;
}
template <typename Fn>
bool WithFixedBits(int w, Fn&& fn) {
  return WithFixedBits(w, fn, std::make_integer_sequence<int, kMaxFixedBits>{});
}

// ---- Element-by-element forms (any width, any work type).

template <typename T>
void PackT(const T* work, size_t elems, int w, uint8_t* wire) {
  int32_t v[kGroup];
  size_t first = 0;  // whole groups at a fixed width first
  if (WithFixedBits(w, [&](auto bits) {
        PackGroupsW<decltype(bits)::value>(work, elems / kGroup, wire);
      }))
    first = elems / kGroup * kGroup;
  for (size_t i = first; i < elems; i += kGroup) {
    int cnt = static_cast<int>(std::min<size_t>(kGroup, elems - i));
    for (int k = 0; k < cnt; ++k) v[k] = work[i + k];
    TernaryPackGroup(v, cnt, w, wire + (i / kGroup) * w);
  }
}

template <typename T>
void UnpackT(const uint8_t* wire, size_t elems, int w, bool accumulate, T* work) {
  int32_t v[kGroup];
  size_t first = 0;
  if (WithFixedBits(w, [&](auto bits) {
        UnpackGroupsW<decltype(bits)::value>(wire, elems / kGroup, accumulate, work);
      }))
    first = elems / kGroup * kGroup;
  for (size_t i = first; i < elems; i += kGroup) {
    int cnt = static_cast<int>(std::min<size_t>(kGroup, elems - i));
    TernaryUnpackGroup(wire + (i / kGroup) * w, cnt, w, v);
    if (accumulate) {
      for (int k = 0; k < cnt; ++k) work[i + k] = static_cast<T>(work[i + k] + v[k]);
    } else {
      for (int k = 0; k < cnt; ++k) work[i + k] = static_cast<T>(v[k]);
    }
  }
}

// q of elements offset .. offset+elems-1, kGroup at a time, with the residual
// update; emit(i, q, cnt) receives each group (i: its position in the range).
template <typename L, typename Emit>
void QuantizeGroups(const TernarySource& src, size_t offset, size_t elems, Emit&& emit) {
  int32_t q[kGroup];
  for (size_t i = 0; i < elems; i += kGroup) {
    const int cnt = static_cast<int>(std::min<size_t>(kGroup, elems - i));
    for (int k = 0; k < cnt; ++k) {
      const uint64_t j = offset + i + static_cast<uint64_t>(k);
      const float s = src.scales[j / src.block];
      float g = L::Load(src.data, src.idx != nullptr ? src.idx[j] : j), sum = 0.0f;
      if (src.residual != nullptr) {
        sum = g + src.residual[j];
        g = L::Round(sum);
      }
      q[k] = TernaryQuantizeOne(g, s, src.levels, PhiloxOct(src.rng, j >> 3), src.rng, j);
      if (src.residual != nullptr)
        src.residual[j] = TernaryFeedbackResidual(sum, s, q[k], src.levels);
    }
    emit(i, q, cnt);
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

CpuIsa Isa() { return ActiveCpuIsa(); }

// The codes at src.levels > 1 levels through the batch loops of the active ISA.
void QuantizeLevels(const TernarySource& src, size_t offset, size_t elems,
                    batch::LevelsSink sink, void* ctx) {
  switch (Isa()) {
    case CpuIsa::kAvx512:
      return simd::QuantizeLevelsAvx512(src, offset, elems, sink, ctx);
    case CpuIsa::kAvx2:
      return simd::QuantizeLevelsAvx2(src, offset, elems, sink, ctx);
    case CpuIsa::kPortable:
      break;
  }
  WithLoader(src.dtype, [&](auto l) {
    batch::QuantizeLevels<PortableOps, decltype(l)>(src, offset, elems, sink, ctx);
  });
}

}  // namespace

TernaryWork TernaryWorkFor(int nranks, int levels) {
  const int64_t most = static_cast<int64_t>(nranks) * levels;
  if (most <= 127) return TernaryWork::kInt8;
  return most <= 32767 ? TernaryWork::kInt16 : TernaryWork::kInt32;
}

void TernaryAbsMax(const TernarySource& src, size_t count, float* scales) {
  switch (Isa()) {
    case CpuIsa::kAvx512:
      return simd::AbsMaxAvx512(src, count, scales);
    case CpuIsa::kAvx2:
      return simd::AbsMaxAvx2(src, count, scales);
    case CpuIsa::kPortable:
      break;
  }
  WithLoader(src.dtype, [&](auto l) { batch::AbsMax<PortableOps, decltype(l)>(src, count, scales); });
}

void TernaryStage(const TernarySource& src, size_t offset, size_t elems, float* out) {
  WithLoader(src.dtype, [&](auto l) {
    using L = decltype(l);
    for (size_t i = 0; i < elems; ++i) {
      const size_t j = offset + i, at = src.idx != nullptr ? src.idx[j] : j;
      out[i] = src.residual != nullptr
                   ? L::Round(TernaryFeedbackSum<L>(src.data, at, src.residual[j]))
                   : L::Load(src.data, at);
    }
  });
}

void TernaryQuantizePack(const TernarySource& src, size_t offset, size_t elems, int w,
                         void* wire) {
  uint8_t* out = static_cast<uint8_t*>(wire);
  if (src.levels > 1) {
    // The batches' codes (each a multiple of 8 elements but the last) collected into
    // runs of kLevelsRun and packed run by run: a pack call per batch cost as much as
    // the quantization (its set-up and zero-padded last chunk).
    constexpr int kLevelsRun = 4096;
    struct Ctx {
      uint8_t* out;
      int w;
      size_t first = 0;  // element (from offset) of codes[0]
      int held = 0;
      alignas(64) int8_t codes[kLevelsRun];
      void Flush() {
        TernaryPack(TernaryWork::kInt8, codes, static_cast<size_t>(held), w,
                    out + first / kGroup * static_cast<size_t>(w));
        first += static_cast<size_t>(held);
        held = 0;
      }
    } ctx;
    ctx.out = out;
    ctx.w = w;
    QuantizeLevels(src, offset, elems, [](void* c, size_t, const int8_t* q, int n) {
      Ctx& x = *static_cast<Ctx*>(c);
      if (x.held + n > kLevelsRun) x.Flush();
      std::memcpy(x.codes + x.held, q, static_cast<size_t>(n));
      x.held += n;
    }, &ctx);
    if (ctx.held > 0) ctx.Flush();
    return;
  }
  if (w == TernaryBits(1)) {
    switch (Isa()) {
      case CpuIsa::kAvx512:
        return simd::QuantizePack2Avx512(src, offset, elems, out);
      case CpuIsa::kAvx2:
        return simd::QuantizePack2Avx2(src, offset, elems, out);
      case CpuIsa::kPortable:
        break;
    }
    WithLoader(src.dtype, [&](auto l) {
      batch::QuantizePack2<PortableOps, decltype(l)>(src, offset, elems, out);
    });
    return;
  }
  WithLoader(src.dtype, [&](auto l) {
    QuantizeGroups<decltype(l)>(src, offset, elems, [&](size_t i, const int32_t* q, int cnt) {
      TernaryPackGroup(q, cnt, w, out + (i / kGroup) * w);
    });
  });
}

void TernaryQuantizeAdd(const TernarySource& src, size_t offset, size_t elems, const void* wire,
                        int w, TernaryWork wt, void* work) {
  const uint8_t* in = static_cast<const uint8_t*>(wire);
  if (src.levels > 1) {  // the codes widened into work, then the wire added
    struct Ctx {
      TernaryWork wt;
      void* work;
    } ctx{wt, work};
    QuantizeLevels(src, offset, elems, [](void* c, size_t i, const int8_t* q, int n) {
      const Ctx& x = *static_cast<const Ctx*>(c);
      WithWork(x.wt, [&](auto t) {
        using T = decltype(t);
        T* out = static_cast<T*>(x.work) + i;
        for (int k = 0; k < n; ++k) out[k] = static_cast<T>(q[k]);
      });
    }, &ctx);
    if (in != nullptr) TernaryUnpack(wt, in, elems, w, /*accumulate=*/true, work);
    return;
  }
  if (wt == TernaryWork::kInt8 && (in == nullptr || w <= 8)) {
    int8_t* sums = static_cast<int8_t*>(work);
    switch (Isa()) {
      case CpuIsa::kAvx512:
        return simd::QuantizeAddInt8Avx512(src, offset, elems, in, w, sums);
      case CpuIsa::kAvx2:
        return simd::QuantizeAddInt8Avx2(src, offset, elems, in, w, sums);
      case CpuIsa::kPortable:
        break;
    }
    WithLoader(src.dtype, [&](auto l) {
      batch::QuantizeAddInt8<PortableOps, decltype(l)>(src, offset, elems, in, w, sums);
    });
    return;
  }
  WithLoader(src.dtype, [&](auto l) {
    WithWork(wt, [&](auto t) {
      using T = decltype(t);
      T* out = static_cast<T*>(work);
      int32_t v[kGroup] = {};
      QuantizeGroups<decltype(l)>(src, offset, elems, [&](size_t i, const int32_t* q, int cnt) {
        if (in != nullptr) TernaryUnpackGroup(in + (i / kGroup) * w, cnt, w, v);
        for (int k = 0; k < cnt; ++k) out[i + k] = static_cast<T>(q[k] + v[k]);
      });
    });
  });
}

void TernaryPack(TernaryWork wt, const void* work, size_t elems, int w, void* wire) {
  uint8_t* out = static_cast<uint8_t*>(wire);
  if (wt == TernaryWork::kInt8 && w == 8) {  // two's complement bytes: the image itself
    std::memcpy(out, work, elems);
    return;
  }
  if (wt == TernaryWork::kInt8 && w <= 6) {  // the wide packs' multiply-adds hold 6 bits
    const int8_t* sums = static_cast<const int8_t*>(work);
    switch (Isa()) {
      case CpuIsa::kAvx512:
        return simd::PackInt8Avx512(sums, elems, w, out);
      case CpuIsa::kAvx2:
        return simd::PackInt8Avx2(sums, elems, w, out);
      case CpuIsa::kPortable:
        break;
    }
  }
  WithWork(wt, [&](auto t) {
    using T = decltype(t);
    PackT(static_cast<const T*>(work), elems, w, out);
  });
}

void TernaryUnpack(TernaryWork wt, const void* wire, size_t elems, int w, bool accumulate,
                   void* work) {
  const uint8_t* in = static_cast<const uint8_t*>(wire);
  if (wt == TernaryWork::kInt8 && w <= 8) {
    int8_t* sums = static_cast<int8_t*>(work);
    switch (Isa()) {
      case CpuIsa::kAvx512:
        return simd::UnpackInt8Avx512(in, elems, w, accumulate, sums);
      case CpuIsa::kAvx2:
        return simd::UnpackInt8Avx2(in, elems, w, accumulate, sums);
      case CpuIsa::kPortable:
        break;
    }
  }
  WithWork(wt, [&](auto t) {
    using T = decltype(t);
    UnpackT(in, elems, w, accumulate, static_cast<T*>(work));
  });
}

void TernaryUnpackAt(TernaryWork wt, const void* wire, size_t first, size_t elems, int w,
                     bool accumulate, void* work) {
  const uint8_t* in = static_cast<const uint8_t*>(wire);
  // Up to the next group boundary element by element, then whole groups.
  const size_t head = std::min(elems, (kGroup - first % kGroup) % kGroup);
  if (head > 0) {
    int32_t v[kGroup];
    TernaryUnpackGroup(in + first / kGroup * w, static_cast<int>(first % kGroup + head), w, v);
    WithWork(wt, [&](auto t) {
      using T = decltype(t);
      T* out = static_cast<T*>(work);
      for (size_t k = 0; k < head; ++k)
        out[k] = static_cast<T>((accumulate ? out[k] : 0) + v[first % kGroup + k]);
    });
  }
  if (elems == head) return;
  TernaryUnpack(wt, in + (first + head) / kGroup * w, elems - head, w, accumulate,
                static_cast<char*>(work) + head * static_cast<size_t>(wt));
}

void TernaryDequantizeRange(DType dtype, TernaryWork wt, const void* sums, size_t offset,
                            size_t elems, size_t block, const float* scales, int divisor, void* out,
                            OutputStores stores) {
  const bool stream = stores == OutputStores::kStreaming;
  if (wt == TernaryWork::kInt8) {
    const int8_t* in = static_cast<const int8_t*>(sums);
    switch (Isa()) {
      case CpuIsa::kAvx512:
        return simd::DequantizeInt8Avx512(dtype, in, offset, elems, block, scales, divisor, out,
                                          stream);
      case CpuIsa::kAvx2:
        return simd::DequantizeInt8Avx2(dtype, in, offset, elems, block, scales, divisor, out,
                                        stream);
      case CpuIsa::kPortable:
        break;
    }
  }
  WithLoader(dtype, [&](auto l) {
    WithWork(wt, [&](auto t) {
      using T = decltype(t);
      DequantizeT<decltype(l), T>(static_cast<const T*>(sums), offset, elems, block, scales,
                                  divisor, out);
    });
  });
}

void TernaryGatherSum(TernaryWork wt, const void* const* wires, int n, int w, size_t elems,
                      void* sums) {
  if (n <= 0 || elems == 0) return;
  if (wt == TernaryWork::kInt8 && w == 2 && Isa() >= CpuIsa::kAvx2)
    return simd::GatherSum2Avx2(reinterpret_cast<const uint8_t* const*>(wires), n, elems,
                                static_cast<int8_t*>(sums));
  for (int r = 0; r < n; ++r) TernaryUnpack(wt, wires[r], elems, w, /*accumulate=*/r > 0, sums);
}

void TernaryGatherDecode(DType dtype, TernaryWork wt, const void* const* wires, int n, int w,
                         size_t offset, size_t elems, size_t block, const float* scales,
                         int divisor, void* out, OutputStores stores) {
  if (n <= 0 || elems == 0) return;
  // The sums of a few thousand elements at a time (whole 2-bit vectors and wire
  // groups) in a buffer that stays in L1, dequantized before the next.
  constexpr size_t kChunk = 2048;
  alignas(64) char sums[kChunk * sizeof(int32_t)];
  std::vector<const void*> at(static_cast<size_t>(n));
  const size_t size = DTypeSize(dtype);
  for (size_t i = 0; i < elems; i += kChunk) {
    const size_t cnt = std::min(kChunk, elems - i);
    for (int r = 0; r < n; ++r)
      at[r] = static_cast<const uint8_t*>(wires[r]) + i / kGroup * static_cast<size_t>(w);
    TernaryGatherSum(wt, at.data(), n, w, cnt, sums);
    TernaryDequantizeRange(dtype, wt, sums, offset + i, cnt, block, scales, divisor,
                           static_cast<char*>(out) + i * size, stores);
  }
}

void TernaryDequantizeScatter(DType dtype, TernaryWork wt, const void* sums, size_t offset,
                              size_t block, const float* scales, int divisor, const uint64_t* bits,
                              size_t begin, size_t end, void* out, OutputStores stores) {
  const bool stream = stores == OutputStores::kStreaming;
  if (wt == TernaryWork::kInt8 && Isa() == CpuIsa::kAvx512)
    return simd::DequantizeScatterInt8Avx512(dtype, static_cast<const int8_t*>(sums), offset, block,
                                             scales, divisor, bits, begin, end, out, stream);
  if (wt == TernaryWork::kInt8 && Isa() == CpuIsa::kAvx2)
    return simd::DequantizeScatterInt8Avx2(dtype, static_cast<const int8_t*>(sums), offset, block,
                                           scales, divisor, bits, begin, end, out, stream);
  WithLoader(dtype, [&](auto l) {
    WithWork(wt, [&](auto t) {
      using T = decltype(t);
      DequantizeScatterT<decltype(l), T>(static_cast<const T*>(sums), offset, block, scales,
                                         divisor, bits, begin, end, out);
    });
  });
}

// One quantizing pass over `sent`; the residual holds g + e_prev and becomes
// what the code dropped.
void TernaryFeedbackUpdate(DType dtype, const void* sent, size_t count, size_t block,
                           const float* scales, const PhiloxStream& rng, float* residual,
                           int levels) {
  TernarySource src = TernarySourceOf(dtype, sent, nullptr, block, scales, rng);
  src.levels = levels;
  if (levels > 1) {  // the element-by-element form: q, then the residual from the sum it holds
    WithLoader(dtype, [&](auto l) {
      using L = decltype(l);
      for (size_t j = 0; j < count; ++j) {
        const float s = scales[j / block];
        const int32_t q =
            TernaryQuantizeOne(L::Load(sent, j), s, levels, PhiloxOct(rng, j >> 3), rng, j);
        residual[j] = TernaryFeedbackResidual(residual[j], s, q, levels);
      }
    });
    return;
  }
  switch (Isa()) {
    case CpuIsa::kAvx512:
      return simd::FeedbackUpdateAvx512(src, count, residual);
    case CpuIsa::kAvx2:
      return simd::FeedbackUpdateAvx2(src, count, residual);
    case CpuIsa::kPortable:
      break;
  }
  WithLoader(dtype, [&](auto l) {
    batch::FeedbackUpdate<PortableOps, decltype(l)>(src, count, residual);
  });
}

}  // namespace sieve::kernels
