// Ternary quantization kernels (DESIGN.md 1.3): block absmax, stochastic
// quantization to {-1, 0, +1}, bit packing of integer partial sums with width
// growth, and dequantization. The per-element arithmetic lives in the SIEVE_HD
// inlines below, shared by the CPU loops (ternary.cc) and CUDA (cuda/ternary.cu).
//
// Wire format of a packed range of `elems` signed integers in `w` bits
// (w = TernaryBits(k) for values in [-k, k]): element i is stored in two's
// complement in stream bits [i*w, (i+1)*w), least significant bit first, where
// stream bit b is bit (b % 8) of byte b / 8 (little-endian bit order). The
// image is ceil(elems * w / 8) bytes; trailing pad bits are 0. Every group of
// 8 elements fills exactly w bytes, so groups pack independently.
#ifndef SIEVE_KERNELS_TERNARY_H_
#define SIEVE_KERNELS_TERNARY_H_

#include <cstddef>
#include <cstdint>

#include "kernels/dtype.h"
#include "kernels/philox.h"

namespace sieve::kernels {

// Integer type of partial sums; the value is its size in bytes.
enum class TernaryWork : int { kInt8 = 1, kInt16 = 2, kInt32 = 4 };
// int8 for n <= 127, int16 for n <= 32767, else int32.
TernaryWork TernaryWorkFor(int nranks);

// Bits of a value in [-k, k]: ceil(log2(2k + 1)) (2 for k = 1, 3 for k = 2..3).
SIEVE_HD inline int TernaryBits(int k) {
  int w = 1;
  while ((uint64_t{1} << w) < 2 * static_cast<uint64_t>(k) + 1) ++w;
  return w;
}
inline size_t TernaryPackedBytes(size_t elems, int w) {
  return (elems * static_cast<size_t>(w) + 7) / 8;
}

// q = sign(g) * [u < |g| / s] with u from `word`; 0 when s <= 0 (or NaN).
SIEVE_HD inline int TernaryQuantizeOne(float g, float s, uint32_t word) {
  const bool keep = (s > 0.0f) & (PhiloxUniform(word) < fabsf(g) / s);  // branch-free
  const int sign = g < 0.0f ? -1 : 1;
  return keep ? sign : 0;
}

// Element loads (float16/bfloat16 widened) and stores (rounded once).
struct TernaryF32 {
  SIEVE_HD static float Load(const void* p, size_t i) { return static_cast<const float*>(p)[i]; }
  SIEVE_HD static void Store(void* p, size_t i, float v) { static_cast<float*>(p)[i] = v; }
};
struct TernaryF16 {
  SIEVE_HD static float Load(const void* p, size_t i) {
    return HalfToFloat(static_cast<const uint16_t*>(p)[i]);
  }
  SIEVE_HD static void Store(void* p, size_t i, float v) {
    static_cast<uint16_t*>(p)[i] = FloatToHalf(v);
  }
};
struct TernaryBf16 {
  SIEVE_HD static float Load(const void* p, size_t i) {
    return Bf16ToFloat(static_cast<const uint16_t*>(p)[i]);
  }
  SIEVE_HD static void Store(void* p, size_t i, float v) {
    static_cast<uint16_t*>(p)[i] = FloatToBf16(v);
  }
};

// q[i] for elements j0 .. j0+cnt-1 of the vector being quantized (one Philox
// call per quad): element j is in[j], or in[idx[j]] when idx is not null.
template <typename L>
SIEVE_HD inline void TernaryQuantizeRun(const void* in, const uint32_t* idx, uint64_t j0, int cnt,
                                        size_t block, const float* scales,
                                        const PhiloxStream& rng, int32_t* q) {
  uint64_t quad = ~uint64_t{0};
  Philox4 r{{0, 0, 0, 0}};
  for (int i = 0; i < cnt; ++i) {
    uint64_t j = j0 + static_cast<uint64_t>(i);
    if ((j >> 2) != quad) {
      quad = j >> 2;
      r = PhiloxQuad(rng, quad);
    }
    q[i] = TernaryQuantizeOne(L::Load(in, idx != nullptr ? idx[j] : j), scales[j / block],
                              r.v[j & 3]);
  }
}

// Packs cnt (<= 8) values in w (<= 32) bits: writes ceil(cnt * w / 8) bytes.
SIEVE_HD inline void TernaryPackGroup(const int32_t* v, int cnt, int w, uint8_t* out) {
  const uint64_t mask = (uint64_t{1} << w) - 1;
  uint64_t acc = 0;
  if (cnt == 8 && w <= 8) {  // a full group fits one 64-bit word: no loop-carried shifts
    for (int i = 0; i < 8; ++i)
      acc |= (static_cast<uint64_t>(static_cast<uint32_t>(v[i])) & mask) << (i * w);
    for (int b = 0; b < w; ++b) out[b] = static_cast<uint8_t>(acc >> (8 * b));
    return;
  }
  int nbits = 0;
  for (int i = 0; i < cnt; ++i) {
    acc |= (static_cast<uint64_t>(static_cast<uint32_t>(v[i])) & mask) << nbits;
    nbits += w;
    while (nbits >= 8) {
      *out++ = static_cast<uint8_t>(acc);
      acc >>= 8;
      nbits -= 8;
    }
  }
  if (nbits > 0) *out = static_cast<uint8_t>(acc);
}

// Unpacks cnt (<= 8) sign-extended values of w bits from ceil(cnt * w / 8) bytes.
SIEVE_HD inline void TernaryUnpackGroup(const uint8_t* in, int cnt, int w, int32_t* v) {
  const uint64_t mask = (uint64_t{1} << w) - 1;
  uint64_t acc = 0;
  if (cnt == 8 && w <= 8) {
    for (int b = 0; b < w; ++b) acc |= static_cast<uint64_t>(in[b]) << (8 * b);
    for (int i = 0; i < 8; ++i) {
      uint32_t raw = static_cast<uint32_t>((acc >> (i * w)) & mask);
      v[i] = static_cast<int32_t>(raw << (32 - w)) >> (32 - w);
    }
    return;
  }
  int nbits = 0;
  for (int i = 0; i < cnt; ++i) {
    while (nbits < w) {
      acc |= static_cast<uint64_t>(*in++) << nbits;
      nbits += 8;
    }
    uint32_t raw = static_cast<uint32_t>(acc & mask);
    acc >>= w;
    nbits -= w;
    v[i] = static_cast<int32_t>(raw << (32 - w)) >> (32 - w);
  }
}

// out = s * Q (divisor 1) or (s * Q) / divisor, in float32.
SIEVE_HD inline float TernaryDequantizeOne(int32_t sum, float s, int divisor) {
  float v = s * static_cast<float>(sum);
  return divisor == 1 ? v : v / static_cast<float>(divisor);
}

// ---- CPU kernels (host memory). The vector being quantized has element j at
// in[j], or at in[idx[j]] when idx is not null (the kept elements of a mask,
// gathered in the same pass); j is also the Philox index and j / block the
// scale block. work/wire/sums pointers address the range itself.
// dtype: float32/float16/bfloat16.

// scales[b] = max |element j| over block b (count elements, ceil(count / block) blocks).
void TernaryAbsMax(DType dtype, const void* in, const uint32_t* idx, size_t count, size_t block,
                   float* scales);
// wire = pack_w(q(elements offset .. offset+elems)).
void TernaryQuantizePack(DType dtype, const void* in, const uint32_t* idx, size_t offset,
                         size_t elems, size_t block, const float* scales, const PhiloxStream& rng,
                         int w, void* wire);
// work[i] = q(element offset+i) (+ unpack_w(wire)[i] when wire is not null).
void TernaryQuantizeAdd(DType dtype, const void* in, const uint32_t* idx, size_t offset,
                        size_t elems, size_t block, const float* scales, const PhiloxStream& rng,
                        const void* wire, int w, TernaryWork wt, void* work);
// wire = pack_w(work[0 .. elems)).
void TernaryPack(TernaryWork wt, const void* work, size_t elems, int w, void* wire);
// work = unpack_w(wire), or work += unpack_w(wire) when accumulate.
void TernaryUnpack(TernaryWork wt, const void* wire, size_t elems, int w, bool accumulate,
                   void* work);
// out[i] = TernaryDequantizeOne(sums[i], scales[(offset + i) / block], divisor) rounded to
// dtype, i < elems (out addresses the range).
void TernaryDequantizeRange(DType dtype, TernaryWork wt, const void* sums, size_t offset,
                            size_t elems, size_t block, const float* scales, int divisor,
                            void* out);
// Dequantize fused with the mask's unpack and zero-fill: for dense positions j in
// [begin, end) of `out` (the whole buffer), out[j] = the dequantized sum of the
// next kept element where bit j of `bits` is set (sums[0] is kept element
// `offset`, the first at or after begin), else 0.
void TernaryDequantizeScatter(DType dtype, TernaryWork wt, const void* sums, size_t offset,
                              size_t block, const float* scales, int divisor,
                              const uint64_t* bits, size_t begin, size_t end, void* out);

// Dense forms (idx = nullptr), and the whole-buffer dequantize.
inline void TernaryAbsMax(DType dtype, const void* in, size_t count, size_t block,
                          float* scales) {
  TernaryAbsMax(dtype, in, nullptr, count, block, scales);
}
inline void TernaryQuantizePack(DType dtype, const void* in, size_t offset, size_t elems,
                                size_t block, const float* scales, const PhiloxStream& rng, int w,
                                void* wire) {
  TernaryQuantizePack(dtype, in, nullptr, offset, elems, block, scales, rng, w, wire);
}
inline void TernaryQuantizeAdd(DType dtype, const void* in, size_t offset, size_t elems,
                               size_t block, const float* scales, const PhiloxStream& rng,
                               const void* wire, int w, TernaryWork wt, void* work) {
  TernaryQuantizeAdd(dtype, in, nullptr, offset, elems, block, scales, rng, wire, w, wt, work);
}
inline void TernaryDequantize(DType dtype, TernaryWork wt, const void* sums, size_t count,
                              size_t block, const float* scales, int divisor, void* out) {
  TernaryDequantizeRange(dtype, wt, sums, 0, count, block, scales, divisor, out);
}

// ---- Scalar references (obviously right, slow): for tests.
// q[i] in {-1, 0, 1} for elements offset .. offset+elems-1 (gathered by idx when not null).
void TernaryQuantizeReference(DType dtype, const void* in, const uint32_t* idx, size_t offset,
                              size_t elems, size_t block, const float* scales,
                              const PhiloxStream& rng, int8_t* q);
inline void TernaryQuantizeReference(DType dtype, const void* in, size_t offset, size_t elems,
                                     size_t block, const float* scales, const PhiloxStream& rng,
                                     int8_t* q) {
  TernaryQuantizeReference(dtype, in, nullptr, offset, elems, block, scales, rng, q);
}
// Bit-by-bit packing / unpacking of int32 values following the wire format.
void TernaryPackReference(const int32_t* v, size_t elems, int w, void* wire);
void TernaryUnpackReference(const void* wire, size_t elems, int w, int32_t* v);
// TernaryDequantizeScatter element by element from the definitions (int32 sums).
void TernaryDequantizeScatterReference(DType dtype, const int32_t* sums, size_t offset,
                                       size_t block, const float* scales, int divisor,
                                       const uint64_t* bits, size_t begin, size_t end,
                                       void* out);

}  // namespace sieve::kernels

#endif  // SIEVE_KERNELS_TERNARY_H_
