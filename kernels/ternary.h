// Ternary and L-level quantization kernels (DESIGN.md 1.3, 1.3a): block absmax,
// stochastic quantization to {-1, 0, +1} (L = 1) or to [-L, L] (TernarySource::levels),
// bit packing of integer partial sums with width growth, and dequantization. One
// set of kernels for every L: L = 1 is the ternary code, bit for bit. The per-element
// arithmetic lives in the SIEVE_HD inlines below, shared by the CPU loops (ternary.cc)
// and CUDA (cuda/ternary_device.cuh).
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
#include "kernels/ternary_feedback.h"

namespace sieve::kernels {

// Integer type of partial sums; the value is its size in bytes.
enum class TernaryWork : int { kInt8 = 1, kInt16 = 2, kInt32 = 4 };
// Partial sums of n ranks at L levels lie in [-nL, nL]: int8 for nL <= 127,
// int16 for nL <= 32767, else int32.
TernaryWork TernaryWorkFor(int nranks, int levels = 1);

// Levels per sign a call may ask for (DESIGN.md 1.3a): codes fit int8.
constexpr int kMaxLevels = 127;

// Bits of a value in [-k, k]: ceil(log2(2k + 1)) (2 for k = 1, 3 for k = 2..3).
SIEVE_HD inline int TernaryBits(int k) {
  int w = 1;
  while ((uint64_t{1} << w) < 2 * static_cast<uint64_t>(k) + 1) ++w;
  return w;
}
inline size_t TernaryPackedBytes(size_t elems, int w) {
  return (elems * static_cast<size_t>(w) + 7) / 8;
}

// ---- The per-element formulas, shared by the CPU kernels (scalar and wide)
// and CUDA (cuda/ternary_device.cuh): the same float32 operations in the same
// order, so every path computes the same bits.

// Block abs-max, as an integer max over magnitude bits: order-free, and a NaN
// ranks above every number. TernaryScaleOfBits turns the block's max into its
// scale: NaN when the block holds a NaN or an infinity (non-finite input
// poisons its block: its scale, result and residuals become NaN).
SIEVE_HD inline uint32_t TernaryMagnitudeBits(float v) {
  uint32_t u;
  memcpy(&u, &v, 4);
  return u & 0x7fffffffu;
}
SIEVE_HD inline float TernaryScaleOfBits(uint32_t m) {
  if (m >= 0x7f800000u) m = 0x7fc00000u;  // infinity or NaN -> the quiet NaN
  float f;
  memcpy(&f, &m, 4);
  return f;
}

// Error feedback's scale is the gradient's (docs/modes.md): s_b = max |g| over the
// block and the ranks, never over g + e_prev, so the abs-max pass does not read the
// residual. A sent value above the scale is clipped: its code is sign(g + e_prev) * L
// and the residual keeps the rest. A NaN scale leaves every residual of its block NaN
// (e = sum - NaN * q), and a finite one never makes a residual NaN, so one residual of
// a block tells whether its scale was poisoned; the abs-max then poisons it again, so
// a block that saw non-finite input stays NaN on later calls, as the caller must see.
//
// A block's max magnitude bits m given one of its residuals e: the quiet NaN's where
// e is NaN.
SIEVE_HD inline uint32_t TernaryPoisonedBits(float e, uint32_t m) {
  return TernaryMagnitudeBits(e) > 0x7f800000u ? 0x7fc00000u : m;
}

// Stochastic rounding of g against scale s: q = sign(g) * [U < p * 2^32] with
// p = |g| / s (one float32 division) and U a uniform 32-bit number, whose high
// half h is the element's 16 Philox bits and low half its refinement bits
// (philox.h). With x = p * 2^16 (exact), h alone decides unless h < x < h + 1
// (a tie, probability below 2^-16), when the refinement decides:
// keep iff lo < (x - h) * 2^16 (both exact). So P(keep) = ceil(p * 2^32) / 2^32:
// the resolution is 2^-32, exactly p whenever p * 2^32 is an integer (every
// p >= 2^-9), never more than 2^-32 above p; only ties pay a second Philox
// evaluation. q = 0 when s <= 0 or s or g is NaN.
SIEVE_HD inline float TernaryLevel(float g, float s) {
  return s > 0.0f ? fabsf(g) / s * 65536.0f : 0.0f;
}
SIEVE_HD inline bool TernaryKeepCoarse(float x, float h) { return h + 1.0f <= x; }
SIEVE_HD inline bool TernaryTie(float x, float h) { return h < x && x < h + 1.0f; }
SIEVE_HD inline bool TernaryKeepFine(float x, float h, uint32_t lo) {
  return static_cast<float>(lo) < (x - h) * 65536.0f;
}
SIEVE_HD inline int TernaryCode(float g, bool keep) { return keep ? (g < 0.0f ? -1 : 1) : 0; }

// L levels (DESIGN.md 1.3a): y = L|g|/s as fl(fl(|g|/s) * L), |q| = floor(y) + [U <
// frac(y) * 2^32], the fraction decided exactly as ternary decides p above (y - floor(y)
// and its scaling by 2^16 are exact). Returns x = frac(y) * 2^16 and sets *base =
// floor(y). For L = 1 this is TernaryLevel (y < 1) or base 1 with x = 0 (|g| = s), so
// the code is ternary's bit for bit. y >= L (|g| above the scale: never from agreed
// scales) gives base L; a NaN y (g or s NaN) or s <= 0 gives 0, as ternary does.
SIEVE_HD inline float LevelsFraction(float g, float s, int levels, int32_t* base) {
  *base = 0;
  if (!(s > 0.0f)) return 0.0f;
  const float lv = static_cast<float>(levels);
  const float y = fabsf(g) / s * lv;
  if (!(y < lv)) {
    if (y >= lv) *base = levels;
    return 0.0f;
  }
  const float k = floorf(y);
  *base = static_cast<int32_t>(k);
  return (y - k) * 65536.0f;
}
// The code from the sign of g, floor(y) and the fraction's keep bit.
SIEVE_HD inline int LevelsCode(float g, int32_t base, bool keep) {
  const int32_t m = base + (keep ? 1 : 0);
  return g < 0.0f ? -m : m;
}

// q for element j of the stream at `levels` levels (1: ternary): r = PhiloxOct(rng,
// j >> 3), the refinement evaluated here on a tie.
SIEVE_HD inline int TernaryQuantizeOne(float g, float s, int levels, const Philox4& r,
                                       const PhiloxStream& rng, uint64_t j) {
  int32_t base;
  const float x = LevelsFraction(g, s, levels, &base);
  const float h = static_cast<float>(PhiloxHalf(r, j));
  bool keep = TernaryKeepCoarse(x, h);
  if (TernaryTie(x, h)) keep = TernaryKeepFine(x, h, PhiloxHalf(PhiloxOct(rng, j >> 3, true), j));
  return LevelsCode(g, base, keep);
}

// Element loads (float16/bfloat16 widened), stores (rounded once), and Round:
// what a float32 value becomes when stored and loaded back; kBytes per element.
struct TernaryF32 {
  static constexpr size_t kBytes = 4;
  SIEVE_HD static float Load(const void* p, size_t i) { return static_cast<const float*>(p)[i]; }
  SIEVE_HD static void Store(void* p, size_t i, float v) { static_cast<float*>(p)[i] = v; }
  SIEVE_HD static float Round(float v) { return v; }
};
struct TernaryF16 {
  static constexpr size_t kBytes = 2;
  SIEVE_HD static float Load(const void* p, size_t i) {
    return HalfToFloat(static_cast<const uint16_t*>(p)[i]);
  }
  SIEVE_HD static void Store(void* p, size_t i, float v) {
    static_cast<uint16_t*>(p)[i] = FloatToHalf(v);
  }
  SIEVE_HD static float Round(float v) { return HalfToFloat(FloatToHalf(v)); }
};
struct TernaryBf16 {
  static constexpr size_t kBytes = 2;
  SIEVE_HD static float Load(const void* p, size_t i) {
    return Bf16ToFloat(static_cast<const uint16_t*>(p)[i]);
  }
  SIEVE_HD static void Store(void* p, size_t i, float v) {
    static_cast<uint16_t*>(p)[i] = FloatToBf16(v);
  }
  SIEVE_HD static float Round(float v) { return Bf16ToFloat(FloatToBf16(v)); }
};

// q[i] for elements j0 .. j0+cnt-1 of the vector being quantized (one Philox
// call per oct): element j is in[j], or in[idx[j]] when idx is not null.
template <typename L>
SIEVE_HD inline void TernaryQuantizeRun(const void* in, const uint32_t* idx, uint64_t j0, int cnt,
                                        size_t block, const float* scales,
                                        const PhiloxStream& rng, int32_t* q, int levels = 1) {
  uint64_t oct = ~uint64_t{0};
  Philox4 r{{0, 0, 0, 0}};
  for (int i = 0; i < cnt; ++i) {
    uint64_t j = j0 + static_cast<uint64_t>(i);
    if ((j >> 3) != oct) {
      oct = j >> 3;
      r = PhiloxOct(rng, oct);
    }
    q[i] = TernaryQuantizeOne(L::Load(in, idx != nullptr ? idx[j] : j), scales[j / block],
                              levels, r, rng, j);
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

// out = s * Q (divisor 1) or (s * Q) / divisor, in float32; with L levels the
// divisor is L (sum) or nL (avg), so L = 1 is ternary's.
SIEVE_HD inline float TernaryDequantizeOne(int32_t sum, float s, int divisor) {
  float v = s * static_cast<float>(sum);
  return divisor == 1 ? v : v / static_cast<float>(divisor);
}

// ---- CPU kernels (host memory), each one pass over its data, dispatched to
// AVX-512 / AVX2 / portable loops (kernels/cpu_isa.h), all bit-identical.

// What the quantizing kernels read. Element j of the vector being quantized is
// data[j], or data[idx[j]] when idx is set (a mask's kept elements, gathered in
// the same pass); j is also its Philox index and j / block its scale block.
// Error feedback (residual set, residual[j] per element j): the element is
// g + e_prev rounded to dtype (TernaryFeedbackSum), and the pass that quantizes
// it also sets residual[j] = g + e_prev - s * q (TernaryFeedbackResidual), one
// read and write of the residual and no second Philox evaluation; so each
// element must be quantized exactly once per step (the ring and the tree do).
// A NaN scale (non-finite input in the block) makes those residuals NaN.
// levels: L (1..kMaxLevels; 1 = ternary); codes lie in [-L, L] and the residual is
// g + e_prev - s * q / L.
struct TernarySource {
  DType dtype = DType::kFloat32;  // float32, float16 or bfloat16
  int levels = 1;
  const void* data = nullptr;
  const uint32_t* idx = nullptr;
  // With idx, optionally the mask's bitmap (bit d of word d / 64 set iff dense
  // position d is kept; idx[j] is the j-th set bit): the AVX-512 paths then load
  // runs of dense positions and compress the kept lanes (no element-by-element
  // gather). The same elements either way.
  const uint64_t* bits = nullptr;
  float* residual = nullptr;
  size_t block = 2048;             // elements per scale block
  const float* scales = nullptr;   // agreed s_b (TernaryAbsMax does not read them)
  PhiloxStream rng;
};

// scales[b] = max |element j| over block b of elements 0 .. count-1
// (ceil(count / block) blocks), NaN where a block holds a NaN or an infinity.
// With feedback the elements are g alone (the gradient, not g + e_prev), and a block
// whose residual is poisoned (TernaryPoisonedBits of its first element in this range)
// gets a NaN scale: one residual read per block.
void TernaryAbsMax(const TernarySource& src, size_t count, float* scales);
// out[i] = element offset+i as the quantizing kernels see it, in float32 (i < elems):
// gathered through idx, g + e_prev rounded to dtype with feedback (the residual is only
// read). Quantizing `out` as float32 with src's rng, scales and levels (no idx, no
// residual) gives src's codes bit for bit, and without feedback its abs-maxes too (with
// it, the scale is g's, not out's): what lets another rank quantize this rank's values
// (the one-shot of values, ternary/values_codec.h).
void TernaryStage(const TernarySource& src, size_t offset, size_t elems, float* out);
// wire = pack_w(q(elements offset .. offset+elems)).
void TernaryQuantizePack(const TernarySource& src, size_t offset, size_t elems, int w,
                         void* wire);
// work[i] = q(element offset+i) + unpack_w(wire)[i] (no wire: q alone).
void TernaryQuantizeAdd(const TernarySource& src, size_t offset, size_t elems, const void* wire,
                        int w, TernaryWork wt, void* work);
// wire = pack_w(work[0 .. elems)).
void TernaryPack(TernaryWork wt, const void* work, size_t elems, int w, void* wire);
// work = unpack_w(wire), or work += unpack_w(wire) when accumulate.
void TernaryUnpack(TernaryWork wt, const void* wire, size_t elems, int w, bool accumulate,
                   void* work);
// The same for elements first .. first+elems-1 of a longer wire image (any first).
void TernaryUnpackAt(TernaryWork wt, const void* wire, size_t first, size_t elems, int w,
                     bool accumulate, void* work);
// How the dequantizers write their output. kStreaming: non-temporal stores on the
// AVX2/AVX-512 paths wherever the output is aligned to the vector (a 64-byte aligned
// buffer, as PyTorch allocates, is), then a store fence before returning. A buffer
// larger than the cache is otherwise read from memory before each line is written
// (read for ownership) and evicts the caller's data; docs/bench/kernels.md (stop 39)
// has the figures. The same bits either way.
enum class OutputStores { kCached, kStreaming };

// out[i] = TernaryDequantizeOne(sums[i], scales[(offset + i) / block], divisor) rounded to
// dtype, i < elems (out addresses the range).
void TernaryDequantizeRange(DType dtype, TernaryWork wt, const void* sums, size_t offset,
                            size_t elems, size_t block, const float* scales, int divisor, void* out,
                            OutputStores stores = OutputStores::kCached);
// The one-shot's decode (DESIGN.md 1.3a) in one pass: out[i] = TernaryDequantizeOne(
// sum over r < n of unpack_w(wires[r])[i], scales[(offset + i) / block], divisor) rounded
// to dtype, i < elems; each wires[r] is a wire image of the range (element offset at bit
// 0), out addresses the range, and wt holds every partial sum (TernaryWorkFor). The same
// bits as TernaryUnpack of wires[0], n - 1 accumulating ones, then
// TernaryDequantizeRange, a few thousand elements at a time, so the sums never leave
// the cache (and, for 2-bit codes into int8 sums, are added in registers).
void TernaryGatherDecode(DType dtype, TernaryWork wt, const void* const* wires, int n, int w,
                         size_t offset, size_t elems, size_t block, const float* scales,
                         int divisor, void* out, OutputStores stores = OutputStores::kCached);
// Its first half: sums[i] = the sum over r < n of unpack_w(wires[r])[i], i < elems, in
// wt (the same as TernaryUnpack of wires[0] and accumulating ones of the others; 2-bit
// images into int8 sums in one pass).
void TernaryGatherSum(TernaryWork wt, const void* const* wires, int n, int w, size_t elems,
                      void* sums);
// The same, element by element from the definitions (for tests).
void TernaryGatherDecodeReference(DType dtype, const void* const* wires, int n, int w,
                                  size_t offset, size_t elems, size_t block, const float* scales,
                                  int divisor, void* out);
// Dequantize fused with the mask's unpack and zero-fill: for dense positions j in
// [begin, end) of `out` (the whole buffer), out[j] = the dequantized sum of the
// next kept element where bit j of `bits` is set (sums[0] is kept element
// `offset`, the first at or after begin), else 0.
// Streams (stores) only where the whole buffer is 64-byte aligned.
void TernaryDequantizeScatter(DType dtype, TernaryWork wt, const void* sums, size_t offset,
                              size_t block, const float* scales, int divisor, const uint64_t* bits,
                              size_t begin, size_t end, void* out,
                              OutputStores stores = OutputStores::kCached);

// Without feedback, by argument (idx may be null: dense), and the whole-buffer dequantize.
inline TernarySource TernarySourceOf(DType dtype, const void* in, const uint32_t* idx,
                                     size_t block, const float* scales,
                                     const PhiloxStream& rng = PhiloxStream{}) {
  TernarySource src;
  src.dtype = dtype;
  src.data = in;
  src.idx = idx;
  src.block = block;
  src.scales = scales;
  src.rng = rng;
  return src;
}
inline void TernaryAbsMax(DType dtype, const void* in, const uint32_t* idx, size_t count,
                          size_t block, float* scales) {
  TernaryAbsMax(TernarySourceOf(dtype, in, idx, block, nullptr), count, scales);
}
inline void TernaryAbsMax(DType dtype, const void* in, size_t count, size_t block,
                          float* scales) {
  TernaryAbsMax(dtype, in, nullptr, count, block, scales);
}
inline void TernaryQuantizePack(DType dtype, const void* in, const uint32_t* idx, size_t offset,
                                size_t elems, size_t block, const float* scales,
                                const PhiloxStream& rng, int w, void* wire) {
  TernaryQuantizePack(TernarySourceOf(dtype, in, idx, block, scales, rng), offset, elems, w, wire);
}
inline void TernaryQuantizePack(DType dtype, const void* in, size_t offset, size_t elems,
                                size_t block, const float* scales, const PhiloxStream& rng, int w,
                                void* wire) {
  TernaryQuantizePack(dtype, in, nullptr, offset, elems, block, scales, rng, w, wire);
}
inline void TernaryQuantizeAdd(DType dtype, const void* in, const uint32_t* idx, size_t offset,
                               size_t elems, size_t block, const float* scales,
                               const PhiloxStream& rng, const void* wire, int w, TernaryWork wt,
                               void* work) {
  TernaryQuantizeAdd(TernarySourceOf(dtype, in, idx, block, scales, rng), offset, elems, wire, w,
                     wt, work);
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

// ---- Scalar references (obviously right, slow): for tests, written from the
// definitions rather than from the shared formulas above.
// scales[b] = NaN if block b holds a non-finite element (g, without the residual) or
// a NaN residual, else max |g|.
void TernaryAbsMaxReference(const TernarySource& src, size_t count, float* scales);
// q[i] in {-1, 0, 1} for elements offset .. offset+elems-1: keep iff U < p * 2^32
// compared exactly (U = 16 Philox bits : 16 refinement bits, p = |g| / s in
// float32); with src.levels = L > 1, q = sign(g) (floor(y) + [U < frac(y) * 2^32]),
// y = fl(fl(|g| / s) * L), in [-L, L]. With feedback, residual_out[i] gets the
// updated residual of element offset+i (src.residual is only read).
void TernaryQuantizeReference(const TernarySource& src, size_t offset, size_t elems, int8_t* q,
                              float* residual_out = nullptr);
inline void TernaryQuantizeReference(DType dtype, const void* in, const uint32_t* idx,
                                     size_t offset, size_t elems, size_t block,
                                     const float* scales, const PhiloxStream& rng, int8_t* q) {
  TernaryQuantizeReference(TernarySourceOf(dtype, in, idx, block, scales, rng), offset, elems, q);
}
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
