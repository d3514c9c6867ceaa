// The loops of the quantizing CPU kernels, written once over an instruction-set
// policy `Ops` (portable in ternary.cc, AVX2 in ternary_avx2.cc, AVX-512 in
// ternary_avx512.cc). Internal to kernels/. Everything here is forced inline so
// it compiles with the instruction set of the entry point it lands in.
//
// A quantizing pass walks its range in batches of kBatch elements (the last one
// shorter), each in chunks of 64: the Philox words of the batch's octs, the
// values as float32 (read in place, or staged: widened, gathered through a
// mask, g + e_prev with error feedback), then per chunk three bit masks (keep,
// negative, and "h < x" from which the rare ties are found and refined one by
// one with the shared scalar formula), and from the masks the output: the 2-bit
// wire, or int8 codes plus the unpacked partial sums, and the residuals.
//
// Ops provides (n64: a number of whole chunks of 64 elements):
//   Philox8(rng, oct0, words)           words[4l + i] = PhiloxOct(rng, oct0 + l).v[i], l < 8
//   Philox32(rng, oct0, words)          the same for l < 32
//   Stage<L>(src, j0, n, g, sum)        g[k] = element j0 + k as quantized (k < n),
//                                       sum[k] = g + e_prev in float32 (feedback only)
//   Masks(g, sc, s, h, n64, keep, neg, maybe)   per element, x = TernaryLevel(g, sc ? sc[k] : s):
//                                       keep and maybe as below, neg = g < 0 (read only
//                                       where kept: there it is g's sign bit)
//   MasksFeedback<L>(data, res, j0, sc, s, h, n64, keep, neg, maybe)   Masks of Round(g + e_prev)
//                                       (whole chunks; data, res by element j0 + k), each
//                                       residual rewritten with the coarse code
//   Wire2(keep, neg, n64, out)          the 2-bit codes, 16 bytes per chunk
//   Codes(keep, neg, n64, q)            int8 codes
//   LevelsCodes(g, sc, s, lv, L, h, n64, q, tie)   the L-level codes (LevelsCodesPortable)
//   AddUnpack(wire, w, n64, acc, work)  work[k] = (acc ? work[k] : 0) + unpack_w(wire)[k]
//                                       (int8, w <= 8); may read kWireSlack bytes past the wire
//   Pack(work, w, n64, wire)            wire = pack_w(work) (int8, w <= Ops::kMaxPackBits); may
//                                       write kWireSlack bytes past the chunks' wire
//   Residual(sum, sc, s, keep, neg, n64, res)   res[k] = TernaryFeedbackResidual(sum, s, q)
//   MaxMagnitude(g, n, m)               m = max(m, TernaryMagnitudeBits(g[k])), any n
// and, where Ops::kReciprocalMasks (the wide policies), for one scale s that
// ReciprocalLevel::Usable and level = ReciprocalLevel(s), without a division:
//   MasksByReciprocal(g, level, h, n64, keep, neg, maybe)          as Masks
//   MasksFeedbackByReciprocal<L>(data, res, j0, level, s, h, n64, keep, neg, maybe)
//                                       as MasksFeedback
//
// keep and maybe of Masks and MasksFeedback: keep holds only coarse keeps
// (TernaryKeepCoarse), and maybe holds every tie and every coarse keep missing from
// keep; it may hold other elements too. ResolveTies decides each element in maybe and
// not in keep by TernaryKeepFine with the exact x, which is the whole decision for any
// element not in keep: true for a coarse keep ((x - h) * 2^16 >= 2^16 > lo), false for
// x <= h. The portable policy writes maybe = (h < x) exactly; the wide ones bound x from
// below without a division (ReciprocalLevel), which puts about 2^-15 of the elements in
// maybe.
#ifndef SIEVE_KERNELS_TERNARY_BATCH_H_
#define SIEVE_KERNELS_TERNARY_BATCH_H_

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "kernels/prefetch.h"
#include "kernels/ternary.h"

#define SIEVE_TK_INLINE inline __attribute__((always_inline))

// CALL with `L` the loader of a floating dtype: the wide entry points' dispatch (a macro,
// not a lambda as ternary.cc's WithLoader: a lambda would not carry the function's target).
#define SIEVE_TK_BY_LOADER(dtype, CALL)       \
  do {                                        \
    if ((dtype) == DType::kFloat16) {         \
      using L = TernaryF16;                   \
      CALL;                                   \
    } else if ((dtype) == DType::kBfloat16) { \
      using L = TernaryBf16;                  \
      CALL;                                   \
    } else {                                  \
      using L = TernaryF32;                   \
      CALL;                                   \
    }                                         \
  } while (0)

namespace sieve::kernels::batch {

constexpr int kBatch = 256;                      // elements per batch (4 chunks)
constexpr int kChunks = kBatch / 64;
constexpr int kOctWords = 4 * (kBatch / 8 + 8);  // an unaligned batch spans one more oct
constexpr int kWireSlack = 16;                   // bytes Ops may read past an unpacked range
// How far ahead of its loads a quantizing loop asks for its input (and residual), in
// elements (kernels/prefetch.h).
constexpr uint64_t kPrefetchAhead = kPrefetchBytes / sizeof(float);

// A policy's constant table for each wire width w = 1 .. 8 (index w - 1), made at compile
// time by make(w): AddUnpack's shuffles, which a call building them for a four-chunk batch
// spent more time on than on the unpack.
template <class Table, class Make>
constexpr std::array<Table, 8> PerWireWidth(Make make) {
  std::array<Table, 8> tables{};
  for (int w = 1; w <= 8; ++w) tables[w - 1] = make(w);
  return tables;
}

using ::sieve::kernels::PrefetchPast;

// The level x = TernaryLevel(g, s) of one scale s without a division, for the wide
// policies' masks: t = trunc(min(|g|, cap) * lo), lo = RN(RN(2^16 / s) * (1 - 2^-20)),
// cap = 2s, decides keep = TernaryKeepCoarse(x, h) = (h < floor(x)) as h < t exactly
// wherever h is neither t nor t + 1 (maybe: ResolveTies decides those exactly).
// Why: q = |g| * 2^16 / s <= 2^17 (|g| <= 2s) and x = RN(q) (scaling by 2^16 is exact). With
// three roundings of relative error <= 2^-24 each, y = fl(|g| * lo) lies within
// q * (1 - 2^-20) * (1 +- 2^-24)^3, so y < q * (1 - 2^-24) <= x and x - y < 2^17 * 2^-19 <
// 1: floor(x) is t or t + 1. (Where x < 1, subnormal quotients included, y < x as well and
// floor(x) = 0 <= t + 1.) |g| > 2s gives t >= 2^17 - 1 > h: a keep, as x >= 2^17 says. A
// NaN g gives t = INT_MIN (cvttps): no keep, no maybe, as for the exact x (AVX2's 16-bit
// lanes saturate it to 0, which puts h = 0 or 1 in maybe: the exact x keeps nothing).
// Usable for normal scales in [2^-100, 2^100], where 2^16 / s, lo and cap neither overflow
// nor underflow; callers divide otherwise (s <= 0 or NaN, per-element scales).
struct ReciprocalLevel {
  static bool Usable(float s) { return s >= 0x1p-100f && s <= 0x1p100f; }
  explicit ReciprocalLevel(float s) : lo(65536.0f / s * (1.0f - 0x1p-20f)), cap(2.0f * s) {}
  float lo, cap;
};

// The Philox words of consecutive batches: evaluations of eight octs at a time,
// the last eight kept for the next batch (an unaligned batch ends inside them).
template <class Ops>
struct OctWords {
  alignas(64) uint32_t words[kOctWords + 32];
  uint64_t first = 0, end = 0;  // octs held: [first, end), from words[0]

  // Element j0's 16 bits and those after it (elements j0 .. j0+n-1).
  SIEVE_TK_INLINE const uint16_t* Bits(const PhiloxStream& rng, uint64_t j0, int n) {
    const uint64_t lo = j0 >> 3, hi = ((j0 + static_cast<uint64_t>(n) - 1) >> 3) + 1;
    if (lo >= end || lo < first) {
      first = end = lo;
    } else if (lo > first) {
      const uint64_t keep = end - lo;
      std::memmove(words, words + 4 * (lo - first), static_cast<size_t>(16 * keep));
      first = lo;
    }
    while (end < hi) {
      if (hi - end >= 32 && end - first <= 16) {  // a whole batch's octs (room: 48 octs)
        Ops::Philox32(rng, end, words + 4 * (end - first));
        end += 32;
      } else {
        Ops::Philox8(rng, end, words + 4 * (end - first));
        end += 8;
      }
    }
    return reinterpret_cast<const uint16_t*>(words) + (j0 & 7);
  }
};

// The portable staging of elements j0+k .. j0+n-1 (Ops::Stage's contract): a policy's
// whole loop, or the tail after its vectors.
template <class L>
SIEVE_TK_INLINE void StageScalar(const TernarySource& src, uint64_t j0, int k, int n, float* g,
                                 float* sum) {
  for (; k < n; ++k) {
    const uint64_t j = j0 + static_cast<uint64_t>(k);
    const float v = L::Load(src.data, src.idx != nullptr ? src.idx[j] : j);
    if (src.residual == nullptr) {
      g[k] = v;
    } else {
      sum[k] = v + src.residual[j];
      g[k] = L::Round(sum[k]);
    }
  }
}

// Bit i of x to bit 2i (x < 2^32).
SIEVE_TK_INLINE uint64_t Spread32(uint64_t x) {
  x = (x | (x << 16)) & 0x0000FFFF0000FFFFull;
  x = (x | (x << 8)) & 0x00FF00FF00FF00FFull;
  x = (x | (x << 4)) & 0x0F0F0F0F0F0F0F0Full;
  x = (x | (x << 2)) & 0x3333333333333333ull;
  return (x | (x << 1)) & 0x5555555555555555ull;
}

// Ops::Wire2 by bit-spreads (the portable policy; AVX2 squares carry-less, AVX-512 deposits
// bits): two's complement in 2 bits, +1 = 01, -1 = 11, 0 = 00 (bit 0 kept, bit 1 sign);
// little-endian, the image's byte order.
SIEVE_TK_INLINE void Wire2BySpread(const uint64_t* keep, const uint64_t* neg, int n64,
                                   uint8_t* out) {
  for (int c = 0; c < n64; ++c) {
    const uint64_t k = keep[c], kn = keep[c] & neg[c];
    const uint64_t lo = Spread32(k & 0xffffffffu) | (Spread32(kn & 0xffffffffu) << 1);
    const uint64_t hi = Spread32(k >> 32) | (Spread32(kn >> 32) << 1);
    std::memcpy(out + 16 * c, &lo, 8);
    std::memcpy(out + 16 * c + 8, &hi, 8);
  }
}

// Per-element scales of elements j0 .. j0+n-1 when they span block boundaries
// (returns sc filled), else nullptr with *s the one scale.
SIEVE_TK_INLINE const float* BatchScales(const TernarySource& src, uint64_t j0, int n, float* sc,
                                         float* s) {
  const size_t b0 = j0 / src.block;
  if ((j0 + static_cast<uint64_t>(n) - 1) / src.block == b0) {
    *s = src.scales[b0];
    return nullptr;
  }
  for (int k = 0; k < n;) {
    const uint64_t j = j0 + static_cast<uint64_t>(k);
    const float v = src.scales[j / src.block];
    const int run = static_cast<int>(std::min<uint64_t>(n - k, src.block - j % src.block));
    for (int e = 0; e < run; ++e) sc[k + e] = v;
    k += run;
  }
  *s = 0.0f;
  return sc;
}

// Ties (h < x < h + 1) decided by the refinement bits, then the masks cut to n.
template <class L>
SIEVE_TK_INLINE void ResolveTies(const TernarySource& src, uint64_t j0, int n, const float* g,
                                 const float* sc, float s, const uint16_t* h, uint64_t* keep,
                                 const uint64_t* maybe) {
  for (int c = 0; c * 64 < n; ++c) {
    uint64_t tie = maybe[c] & ~keep[c];
    const int left = n - 64 * c;
    if (left < 64) {
      const uint64_t valid = (uint64_t{1} << left) - 1;
      tie &= valid;
      keep[c] &= valid;
    }
    for (; tie != 0; tie &= tie - 1) {
      const int k = 64 * c + __builtin_ctzll(tie);
      const uint64_t j = j0 + static_cast<uint64_t>(k);
      const float x = TernaryLevel(g[k], sc != nullptr ? sc[k] : s);
      const uint32_t lo = PhiloxHalf(PhiloxOct(src.rng, j >> 3, /*refine=*/true), j);
      if (TernaryKeepFine(x, static_cast<float>(h[k]), lo)) keep[c] |= uint64_t{1} << (k & 63);
    }
  }
}

// ResolveTies after Ops::MasksFeedback, which wrote every residual with the coarse
// code: a tie's is its sum (q = 0), so its value is read back from there, and a tie
// that keeps gets its residual again with q = +-1 (the same bits as from the sum).
template <class L>
SIEVE_TK_INLINE void ResolveTiesFeedback(const TernarySource& src, uint64_t j0, int n64,
                                         const float* sc, float s, const uint16_t* h,
                                         uint64_t* keep, const uint64_t* maybe) {
  for (int c = 0; c < n64; ++c) {
    for (uint64_t tie = maybe[c] & ~keep[c]; tie != 0; tie &= tie - 1) {
      const int k = 64 * c + __builtin_ctzll(tie);
      const uint64_t j = j0 + static_cast<uint64_t>(k);
      const float sum = src.residual[j], g = L::Round(sum), sk = sc != nullptr ? sc[k] : s;
      const uint32_t lo = PhiloxHalf(PhiloxOct(src.rng, j >> 3, /*refine=*/true), j);
      if (TernaryKeepFine(TernaryLevel(g, sk), static_cast<float>(h[k]), lo)) {
        keep[c] |= uint64_t{1} << (k & 63);
        src.residual[j] = TernaryFeedbackResidual(sum, sk, TernaryCode(g, true));
      }
    }
  }
}

// Ops::Masks, or MasksByReciprocal where the policy has it and the one scale allows.
template <class Ops>
SIEVE_TK_INLINE void MasksOf(const float* g, const float* sc, float s, const uint16_t* h, int n64,
                             uint64_t* keep, uint64_t* neg, uint64_t* maybe) {
  if constexpr (Ops::kReciprocalMasks) {
    if (sc == nullptr && ReciprocalLevel::Usable(s))
      return Ops::MasksByReciprocal(g, ReciprocalLevel(s), h, n64, keep, neg, maybe);
  }
  Ops::Masks(g, sc, s, h, n64, keep, neg, maybe);
}

// Ops::MasksFeedback, or MasksFeedbackByReciprocal likewise.
template <class Ops, class L>
SIEVE_TK_INLINE void MasksFeedbackOf(const void* data, float* res, uint64_t j0, const float* sc,
                                     float s, const uint16_t* h, int n64, uint64_t* keep,
                                     uint64_t* neg, uint64_t* maybe) {
  if constexpr (Ops::kReciprocalMasks) {
    if (sc == nullptr && ReciprocalLevel::Usable(s))
      return Ops::template MasksFeedbackByReciprocal<L>(data, res, j0, ReciprocalLevel(s), s, h,
                                                        n64, keep, neg, maybe);
  }
  Ops::template MasksFeedback<L>(data, res, j0, sc, s, h, n64, keep, neg, maybe);
}

// LevelsFraction and LevelsCode of 64 * n64 elements in one branch-free pass, the same
// bits: y outside [0, L) (s <= 0, NaN, |g| above s) counts as 0, or as base L when
// y >= L; x = (y - floor(y)) * 2^16 exactly; keep = TernaryKeepCoarse(x, h). q gets the
// coarse code, bit e of tie[c] is TernaryTie(x, h) of element 64c + e (the refinement
// decides it: Quantizer::ResolveLevelsTies). sc null: the scale s for all. The policies'
// LevelsCodes (the portable one calls this; AVX2: ternary_levels_x86.h, AVX-512:
// LevelsCode16 in ternary_avx512.cc).
SIEVE_TK_INLINE void LevelsCodesPortable(const float* g, const float* sc, float s, float lv,
                                         int levels, const uint16_t* h, int n64, int8_t* q,
                                         uint64_t* tie) {
  for (int c = 0; c < n64; ++c) {
    uint64_t ties = 0;
    for (int e = 0; e < 64; ++e) {
      const int k = 64 * c + e;
      const float sk = sc != nullptr ? sc[k] : s;
      const float y = fabsf(g[k]) / sk * lv;
      const bool positive = sk > 0.0f;
      const float in = (positive && y < lv) ? y : 0.0f;
      const int32_t whole = static_cast<int32_t>(in);  // floor: 0 <= in < L
      const float x = (in - static_cast<float>(whole)) * 65536.0f;
      const float hk = static_cast<float>(h[k]);
      const bool keep = TernaryKeepCoarse(x, hk);
      const int32_t m = (positive && y >= lv) ? levels : whole + (keep ? 1 : 0);
      q[k] = static_cast<int8_t>(g[k] < 0.0f ? -m : m);
      ties |= static_cast<uint64_t>(TernaryTie(x, hk)) << e;
    }
    tie[c] = ties;
  }
}

// One batch's masks: the values (in place or staged), the Philox bits, the
// scales. Returns the values' pointer; *sum is the staged float32 sums (feedback).
//
// L > 1 levels (src.levels): no masks; the int8 codes straight from the values and
// the Philox bits in one pass (LevelsCodes), then the ties (q).
template <class Ops, class L>
struct Quantizer {
  OctWords<Ops> oct;
  alignas(64) float staged[kBatch];
  alignas(64) float sums[kBatch];
  alignas(64) float sc_buf[kBatch];
  alignas(64) int8_t q[kBatch];  // L > 1 only: the codes
  uint64_t ties[kChunks];        // L > 1 only: where the refinement decides
  alignas(64) uint64_t keep[kChunks], neg[kChunks], maybe[kChunks];
  const float* sc = nullptr;
  float s = 0.0f;
  bool residuals_done = false;  // Run updated the batch's residuals itself

  // The rare ties of LevelsCodes (probability below 2^-16 each), decided one by one
  // with the shared scalar formula: q moves one level away from 0 where it keeps.
  SIEVE_TK_INLINE void ResolveLevelsTies(const TernarySource& src, uint64_t j0, int n,
                                         const float* g, const uint16_t* h) {
    for (int c = 0; c * 64 < n; ++c) {
      for (uint64_t tie = ties[c]; tie != 0; tie &= tie - 1) {
        const int k = 64 * c + __builtin_ctzll(tie);
        if (k >= n) break;
        const uint64_t j = j0 + static_cast<uint64_t>(k);
        int32_t whole;
        const float x = LevelsFraction(g[k], sc != nullptr ? sc[k] : s, src.levels, &whole);
        const uint32_t lo = PhiloxHalf(PhiloxOct(src.rng, j >> 3, /*refine=*/true), j);
        if (TernaryKeepFine(x, static_cast<float>(h[k]), lo))
          q[k] = static_cast<int8_t>(q[k] + (g[k] < 0.0f ? -1 : 1));
      }
    }
  }

  // Masks of elements j0 .. j0+n-1 (n <= kBatch); bits past n are 0 in keep.
  SIEVE_TK_INLINE const float* Run(const TernarySource& src, uint64_t j0, int n) {
    const int n64 = (n + 63) / 64;
    residuals_done = false;
    if (src.residual != nullptr && src.idx == nullptr && src.levels == 1 && n == 64 * n64) {
      // Error feedback on whole chunks in one pass: the values and residuals read
      // in place, the residuals rewritten (no staging).
      const uint16_t* h = oct.Bits(src.rng, j0, n);
      sc = BatchScales(src, j0, n, sc_buf, &s);
      MasksFeedbackOf<Ops, L>(src.data, src.residual, j0, sc, s, h, n64, keep, neg, maybe);
      ResolveTiesFeedback<L>(src, j0, n64, sc, s, h, keep, maybe);
      residuals_done = true;
      return nullptr;
    }
    const float* g = staged;
    if (std::is_same<L, TernaryF32>::value && src.idx == nullptr && src.residual == nullptr &&
        n == 64 * n64) {
      g = static_cast<const float*>(src.data) + j0;
    } else {
      Ops::template Stage<L>(src, j0, n, staged, sums);
      for (int k = n; k < 64 * n64; ++k) staged[k] = 0.0f;
    }
    const uint16_t* h = oct.Bits(src.rng, j0, n);
    sc = BatchScales(src, j0, n, sc_buf, &s);
    if (sc != nullptr)
      for (int k = n; k < 64 * n64; ++k) sc_buf[k] = 0.0f;
    if (src.levels > 1) {
      Ops::LevelsCodes(g, sc, s, static_cast<float>(src.levels), src.levels, h, n64, q, ties);
      ResolveLevelsTies(src, j0, n, g, h);
      return g;
    }
    MasksOf<Ops>(g, sc, s, h, n64, keep, neg, maybe);
    ResolveTies<L>(src, j0, n, g, sc, s, h, keep, maybe);
    return g;
  }
};

// res[k] = sum[k] - s * q[k] for the batch's n elements (res may be sum).
template <class Ops, class L>
SIEVE_TK_INLINE void UpdateResiduals(const Quantizer<Ops, L>& qz, const float* sum, int n,
                                     float* res) {
  const int n64 = n / 64;
  Ops::Residual(sum, qz.sc, qz.s, qz.keep, qz.neg, n64, res);
  if (n % 64 != 0) {
    alignas(64) float in[64] = {}, tail[64];
    std::memcpy(in, sum + 64 * n64, sizeof(float) * (n % 64));
    Ops::Residual(in, qz.sc != nullptr ? qz.sc + 64 * n64 : nullptr, qz.s, qz.keep + n64,
                  qz.neg + n64, 1, tail);
    std::memcpy(res + 64 * n64, tail, sizeof(float) * (n % 64));
  }
}

// TernaryQuantizePack into 2 bits.
template <class Ops, class L>
SIEVE_TK_INLINE void QuantizePack2(const TernarySource& src, size_t offset, size_t elems,
                                   uint8_t* wire) {
  Quantizer<Ops, L> qz;
  for (size_t i = 0; i < elems; i += kBatch) {
    const int n = static_cast<int>(std::min<size_t>(kBatch, elems - i));
    const uint64_t j0 = offset + i;
    qz.Run(src, j0, n);
    const int n64 = n / 64;
    Ops::Wire2(qz.keep, qz.neg, n64, wire + i / 4);
    if (n % 64 != 0) {
      alignas(16) uint8_t tail[16];
      Ops::Wire2(qz.keep + n64, qz.neg + n64, 1, tail);
      std::memcpy(wire + i / 4 + 16 * n64, tail, (static_cast<size_t>(n % 64) * 2 + 7) / 8);
    }
    if (src.residual != nullptr && !qz.residuals_done)
      UpdateResiduals(qz, qz.sums, n, src.residual + j0);
  }
}

// work[k] = (accumulate ? work[k] : 0) + unpack_w(wire)[first + k] for k < n: elements
// first .. first + n - 1 of a wire of `total` elements (first a multiple of 64), int8
// work, w <= 8.
template <class Ops>
SIEVE_TK_INLINE void UnpackElements(const uint8_t* wire, size_t total, size_t first, size_t n,
                                    int w, bool accumulate, int8_t* work) {
  const size_t bytes = TernaryPackedBytes(total, w);
  // Whole chunks whose reads (kWireSlack past their end) stay inside the image.
  const size_t direct = bytes >= static_cast<size_t>(kWireSlack)
                            ? (bytes - kWireSlack) / (8 * static_cast<size_t>(w))
                            : 0;
  const size_t first_chunk = first / 64;
  const size_t direct_elems =
      direct > first_chunk ? std::min((direct - first_chunk) * 64, n / 64 * 64) : 0;
  const uint8_t* at_first = wire + first / 8 * static_cast<size_t>(w);
  if (direct_elems > 0)
    Ops::AddUnpack(at_first, w, static_cast<int>(direct_elems / 64), accumulate, work);
  for (size_t i = direct_elems; i < n;) {  // the rest through a zero-padded copy
    alignas(64) uint8_t pad[8 * 8 * 4 + kWireSlack] = {};
    alignas(64) int8_t sums[4 * 64] = {};
    const size_t m = std::min<size_t>(4 * 64, n - i);
    const size_t at = (first + i) / 8 * static_cast<size_t>(w);
    std::memcpy(pad, wire + at, std::min(bytes - at, TernaryPackedBytes(m, w)));
    if (accumulate) std::memcpy(sums, work + i, m);
    Ops::AddUnpack(pad, w, static_cast<int>((m + 63) / 64), accumulate, sums);
    std::memcpy(work + i, sums, m);
    i += m;
  }
}

// work = (accumulate ? work : 0) + unpack_w(wire) for a range of elems, int8 work, w <= 8.
template <class Ops>
SIEVE_TK_INLINE void UnpackRange(const uint8_t* wire, size_t elems, int w, bool accumulate,
                                 int8_t* work) {
  UnpackElements<Ops>(wire, elems, 0, elems, w, accumulate, work);
}

// TernaryQuantizeAdd into int8 work with a wire of w <= 8 bits (or none).
template <class Ops, class L>
SIEVE_TK_INLINE void QuantizeAddInt8(const TernarySource& src, size_t offset, size_t elems,
                                     const uint8_t* wire, int w, int8_t* work) {
  Quantizer<Ops, L> qz;
  for (size_t i = 0; i < elems; i += kBatch) {
    const int n = static_cast<int>(std::min<size_t>(kBatch, elems - i));
    const uint64_t j0 = offset + i;
    qz.Run(src, j0, n);
    const int n64 = n / 64;
    Ops::Codes(qz.keep, qz.neg, n64, work + i);
    if (n % 64 != 0) {
      alignas(64) int8_t tail[64];
      Ops::Codes(qz.keep + n64, qz.neg + n64, 1, tail);
      std::memcpy(work + i + 64 * n64, tail, static_cast<size_t>(n % 64));
    }
    if (src.residual != nullptr && !qz.residuals_done)
      UpdateResiduals(qz, qz.sums, n, src.residual + j0);
    // The incoming partial sums while the batch's codes are in L1 (a pass over the whole
    // work afterwards read and wrote it again from L2, or from memory at tens of MiB).
    if (wire != nullptr)
      UnpackElements<Ops>(wire, elems, i, static_cast<size_t>(n), w, /*accumulate=*/true, work + i);
  }
}

// wire = pack_w(work) for a range of elems, int8 work, w <= Ops::kMaxPackBits.
template <class Ops>
SIEVE_TK_INLINE void PackRange(const int8_t* work, size_t elems, int w, uint8_t* wire) {
  const size_t bytes = TernaryPackedBytes(elems, w);
  const size_t direct = bytes >= static_cast<size_t>(kWireSlack)
                            ? (bytes - kWireSlack) / (8 * static_cast<size_t>(w))
                            : 0;
  size_t i = std::min(direct * 64, elems / 64 * 64);
  if (i > 0) Ops::Pack(work, w, static_cast<int>(i / 64), wire);
  while (i < elems) {  // the rest through zero-padded copies (zeros pack to 0 bits)
    alignas(64) int8_t sums[4 * 64] = {};
    alignas(64) uint8_t pad[8 * 8 * 4 + kWireSlack];
    const size_t n = std::min<size_t>(4 * 64, elems - i);
    std::memcpy(sums, work + i, n);
    Ops::Pack(sums, w, static_cast<int>((n + 63) / 64), pad);
    std::memcpy(wire + i / 8 * static_cast<size_t>(w), pad, TernaryPackedBytes(n, w));
    i += n;
  }
}

// TernaryFeedbackUpdate: `sent` quantized again in one pass; residual (holding
// g + e_prev) becomes g + e_prev - s * q.
template <class Ops, class L>
SIEVE_TK_INLINE void FeedbackUpdate(const TernarySource& sent, size_t count, float* residual) {
  Quantizer<Ops, L> qz;
  for (size_t i = 0; i < count; i += kBatch) {
    const int n = static_cast<int>(std::min<size_t>(kBatch, count - i));
    qz.Run(sent, i, n);
    UpdateResiduals(qz, residual + i, n, residual + i);
  }
}

// The codes of elements offset .. offset+elems-1 at src.levels > 1 levels, one
// batch at a time: sink(ctx, i, q, n) receives q[0 .. n) (int8, in [-L, L]) of
// elements offset+i ..; with error feedback the residuals are updated first.
using LevelsSink = void (*)(void* ctx, size_t i, const int8_t* q, int n);

template <class Ops, class L>
SIEVE_TK_INLINE void QuantizeLevels(const TernarySource& src, size_t offset, size_t elems,
                                    LevelsSink sink, void* ctx) {
  Quantizer<Ops, L> qz;
  for (size_t i = 0; i < elems; i += kBatch) {
    const int n = static_cast<int>(std::min<size_t>(kBatch, elems - i));
    const uint64_t j0 = offset + i;
    qz.Run(src, j0, n);
    const int8_t* q = qz.q;
    if (src.residual != nullptr) {
      float* res = src.residual + j0;
      for (int k = 0; k < n; ++k)
        res[k] = TernaryFeedbackResidual(qz.sums[k], qz.sc != nullptr ? qz.sc[k] : qz.s, q[k],
                                         src.levels);
    }
    sink(ctx, i, q, n);
  }
}

// TernaryAbsMax: per block, the max magnitude bits of its elements' values (read
// through idx; never the residual: error feedback's scale is the gradient's, ternary.h),
// NaN where TernaryPoisonedBits says a block's residual is (one read per block).
template <class Ops, class L>
SIEVE_TK_INLINE void AbsMax(const TernarySource& src, size_t count, float* scales) {
  if (std::is_same<L, TernaryF32>::value && src.idx == nullptr) {
    // The caller's float32 in place: block by block, no batches (a batch's bookkeeping,
    // two divisions and a reduction per 256 elements, cost as much as its loads).
    constexpr size_t kRun = size_t{1} << 20;  // MaxMagnitude counts in int
    const float* g = static_cast<const float*>(src.data);
    for (size_t first = 0, b = 0; first < count; first += src.block, ++b) {
      const size_t end = std::min(count, first + src.block);
      uint32_t m = 0;
      for (size_t j = first; j < end; j += kRun)
        Ops::MaxMagnitude(g + j, static_cast<int>(std::min(kRun, end - j)), &m);
      if (src.residual != nullptr) m = TernaryPoisonedBits(src.residual[first], m);
      scales[b] = TernaryScaleOfBits(m);
    }
    return;
  }
  alignas(64) float staged[kBatch];
  alignas(64) float sums[kBatch];
  TernarySource values = src;
  values.residual = nullptr;
  uint32_t m = 0;
  for (size_t i = 0; i < count; i += kBatch) {
    const int n = static_cast<int>(std::min<size_t>(kBatch, count - i));
    const float* g = staged;
    Ops::template Stage<L>(values, i, n, staged, sums);
    for (int k = 0; k < n;) {  // runs within one block
      const size_t j = i + static_cast<size_t>(k);
      const int run = static_cast<int>(std::min<size_t>(n - k, src.block - j % src.block));
      Ops::MaxMagnitude(g + k, run, &m);
      k += run;
      if ((j + run) % src.block == 0 || j + run == count) {
        const size_t b = (j + run - 1) / src.block;
        if (src.residual != nullptr) m = TernaryPoisonedBits(src.residual[b * src.block], m);
        scales[b] = TernaryScaleOfBits(m);
        m = 0;
      }
    }
  }
}

// One round of the dequantize-scatter kernels (ternary_avx2.cc, ternary_avx512.cc):
// the bitmap words from element j's word on, at most kWords of them and none past
// `end`. Sets *stop (where the round ends), *nw (its words), ranges[w] (word w's
// part of [j, *stop)) and words[w] (the kept bits in it); returns the kept count.
template <int kWords>
SIEVE_TK_INLINE int ScatterRound(const uint64_t* bits, size_t j, size_t end, size_t* stop,
                                 int* nw, uint64_t* words, uint64_t* ranges) {
  const size_t base = j & ~size_t{63};
  *stop = std::min(end, base + 64 * kWords);
  *nw = static_cast<int>((*stop - base + 63) / 64);
  int cnt = 0;
  for (int w = 0; w < *nw; ++w) {
    uint64_t range = ~uint64_t{0};
    if (w == 0) range <<= j - base;
    const size_t wend = base + 64 * static_cast<size_t>(w) + 64;
    if (wend > *stop) range &= (uint64_t{1} << (64 - (wend - *stop))) - 1;
    ranges[w] = range;
    words[w] = bits[base / 64 + static_cast<size_t>(w)] & range;
    cnt += __builtin_popcountll(words[w]);
  }
  return cnt;
}

}  // namespace sieve::kernels::batch

#endif  // SIEVE_KERNELS_TERNARY_BATCH_H_
