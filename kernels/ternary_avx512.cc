// The AVX-512 policy of ternary_batch.h (sixteen float32 lanes, mask registers;
// VBMI byte permutes and multishifts for the w-bit wire; BMI2 bit deposit for
// the 2-bit codes) and the AVX-512 entry points of ternary_simd.h. Compiled
// for baseline x86-64: only these functions carry the target, and callers
// dispatch at run time (CpuIsa::kAvx512 includes VBMI and BMI2).
#include "kernels/ternary_simd.h"

#if defined(__x86_64__)
// GCC 12 warns about its own AVX-512 intrinsics (_mm512_undefined_* inside
// set1/shift/multiply helpers): a known false positive, silenced for this file only.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>

#include "kernels/ternary_batch.h"

#define SIEVE_AVX512_TARGET \
  target("avx512f,avx512bw,avx512vl,avx512vbmi,avx512vbmi2,bmi2,f16c,popcnt")
// Entry points inline everything below them (flatten); the helpers carry the target.
#define SIEVE_AVX512_FN __attribute__((SIEVE_AVX512_TARGET, flatten))
#define SIEVE_AVX512 inline __attribute__((SIEVE_AVX512_TARGET))

namespace sieve::kernels::simd {

namespace {

SIEVE_AVX512 __mmask64 ByteMask(int bytes) {
  return bytes >= 64 ? ~__mmask64{0} : (__mmask64{1} << bytes) - 1;
}

// float32 bits -> bfloat16 bits as FloatToBf16, in the low halves of the lanes.
SIEVE_AVX512 __m512i Bf16Bits(__m512 v) {
  const __m512i x = _mm512_castps_si512(v);
  __m512i r = _mm512_add_epi32(_mm512_add_epi32(x, _mm512_set1_epi32(0x7fff)),
                               _mm512_and_si512(_mm512_srli_epi32(x, 16), _mm512_set1_epi32(1)));
  r = _mm512_srli_epi32(r, 16);
  const __mmask16 nan = _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
  return _mm512_mask_or_epi32(r, nan, _mm512_srli_epi32(x, 16), _mm512_set1_epi32(0x40));
}

// Sixteen float32 -> float16 or bfloat16 bits exactly as L::Store rounds them
// (vcvtps2ph rounds like FloatToHalf; a NaN's payload differs, so a vector
// holding one converts element by element).
template <class L>
SIEVE_AVX512 __m256i Narrow16(__m512 v) {
  if (std::is_same<L, TernaryBf16>::value) return _mm512_cvtepi32_epi16(Bf16Bits(v));
  if (_mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q) == 0)
    return _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  alignas(64) float f[16];
  alignas(32) uint16_t h[16];
  _mm512_store_ps(f, v);
  for (int k = 0; k < 16; ++k) h[k] = FloatToHalf(f[k]);
  return _mm256_load_si256(reinterpret_cast<const __m256i*>(h));
}

template <class L>
SIEVE_AVX512 __m512 Load16(const void* p, size_t j) {
  if (std::is_same<L, TernaryF16>::value)
    return _mm512_cvtph_ps(
        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(static_cast<const uint16_t*>(p) + j)));
  if (std::is_same<L, TernaryBf16>::value)
    return _mm512_castsi512_ps(_mm512_slli_epi32(
        _mm512_cvtepu16_epi32(_mm256_loadu_si256(
            reinterpret_cast<const __m256i*>(static_cast<const uint16_t*>(p) + j))),
        16));
  return _mm512_loadu_ps(static_cast<const float*>(p) + j);
}

// L::Round, sixteen at a time (a NaN stays NaN; its payload does not matter:
// it quantizes to 0 against any scale, and its block's scale is NaN).
template <class L>
SIEVE_AVX512 __m512 Round16(__m512 v) {
  if (std::is_same<L, TernaryF16>::value)
    return _mm512_cvtph_ps(_mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  if (std::is_same<L, TernaryBf16>::value)
    return _mm512_castsi512_ps(_mm512_slli_epi32(Bf16Bits(v), 16));
  return v;
}

// Sixteen elements of dtype from p + j, only the lanes of m read (the others 0):
// nothing outside them is touched, so no read passes the last kept element.
template <class L>
SIEVE_AVX512 __m512 MaskedLoad16(const void* p, size_t j, __mmask16 m) {
  if (std::is_same<L, TernaryF32>::value)
    return _mm512_maskz_loadu_ps(m, static_cast<const float*>(p) + j);
  const __m256i h = _mm256_maskz_loadu_epi16(m, static_cast<const uint16_t*>(p) + j);
  if (std::is_same<L, TernaryF16>::value) return _mm512_cvtph_ps(h);
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}

// Elements j0 .. j0+n-1 (n >= 1) of a source with a mask bitmap: sixteen dense
// positions at a time from idx[j0] on, the kept lanes loaded and compressed
// (vcompressps) into g, until n are in.
template <class L>
SIEVE_AVX512 void CompressKept(const TernarySource& src, uint64_t j0, int n, float* g) {
  const size_t first = src.idx[j0];
  size_t a = first & ~size_t{15};
  uint32_t m = static_cast<uint32_t>(src.bits[a / 64] >> (a % 64)) & (0xffffu << (first - a)) &
               0xffffu;
  for (int k = 0;;) {
    int pc = __builtin_popcount(m);
    if (pc >= n - k) {  // the last run: only its first n - k kept lanes
      pc = n - k;
      m = _pdep_u32((1u << pc) - 1, m);
    }
    const __mmask16 lanes = static_cast<__mmask16>(m);
    PrefetchPast(src.data, (a + batch::kPrefetchAhead) * L::kBytes);
    _mm512_mask_storeu_ps(g + k, static_cast<__mmask16>((1u << pc) - 1),
                          _mm512_maskz_compress_ps(lanes, MaskedLoad16<L>(src.data, a, lanes)));
    k += pc;
    if (k == n) return;
    a += 16;
    m = static_cast<uint32_t>(src.bits[a / 64] >> (a % 64)) & 0xffffu;
  }
}

// LevelsCode8 of ternary_levels_x86.h in sixteen lanes, the same bits: y =
// fl(fl(|g| / s) * L); F = trunc(y * 2^16) (exact: y < L <= 127); the code is
// F >> 16, + 1 where F & 0xffff > h, L where y >= L, 0 where y is outside [0, L)
// otherwise (s <= 0 unless kPositive, NaN), negated where g's sign bit is set; *tie
// marks F & 0xffff == h with y * 2^16 not an integer.
template <bool kPositive>
SIEVE_AVX512 __m512i LevelsCode16(__m512 gk, __m512 sk, const uint16_t* h, __m512 vl, __m512i top,
                                  __mmask16* tie) {
  const __m512 y = _mm512_mul_ps(_mm512_div_ps(_mm512_abs_ps(gk), sk), vl);
  __mmask16 under = _mm512_cmp_ps_mask(y, vl, _CMP_LT_OQ);  // false for NaN
  __mmask16 over = _mm512_cmp_ps_mask(y, vl, _CMP_GE_OQ);
  if (!kPositive) {
    const __mmask16 positive = _mm512_cmp_ps_mask(sk, _mm512_setzero_ps(), _CMP_GT_OQ);
    under &= positive;
    over &= positive;
  }
  const __m512 y16 = _mm512_maskz_mul_ps(under, y, _mm512_set1_ps(65536.0f));
  const __m512i f = _mm512_cvttps_epi32(y16);
  const __m512i fx = _mm512_and_si512(f, _mm512_set1_epi32(0xffff));
  const __m512i hk = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(h)));
  const __mmask16 keep = _mm512_cmpgt_epi32_mask(fx, hk);
  *tie = _mm512_mask_cmpeq_epi32_mask(_mm512_cmp_ps_mask(_mm512_cvtepi32_ps(f), y16, _CMP_NEQ_UQ),
                                      fx, hk);
  __m512i m = _mm512_srli_epi32(f, 16);
  m = _mm512_mask_add_epi32(m, keep, m, _mm512_set1_epi32(1));
  m = _mm512_mask_mov_epi32(m, over, top);
  // Negated where g's sign bit is set (a -0 or NaN g has m = 0 either way).
  const __m512i zero = _mm512_setzero_si512();
  return _mm512_mask_sub_epi32(m, _mm512_cmplt_epi32_mask(_mm512_castps_si512(gk), zero), zero, m);
}

// Four 16-lane masks, lanes 0-15 first, as one 64-bit word, joined in mask registers
// (kunpckwd, kunpckdq, one kmovq) rather than moved out and shifted one by one.
SIEVE_AVX512 uint64_t Join64(const __mmask16 (&m)[4]) {
  return _cvtmask64_u64(_mm512_kunpackd(_mm512_kunpackw(m[3], m[2]), _mm512_kunpackw(m[1], m[0])));
}

// g + e_prev of sixteen elements from j (r: their residuals), asking for the lines of
// both kPrefetchAhead elements ahead (a line each).
template <class L>
SIEVE_AVX512 __m512 FeedbackSum16(const void* data, uint64_t j, const float* r) {
  batch::PrefetchPast(r, kPrefetchBytes);
  batch::PrefetchPast(data, (j + batch::kPrefetchAhead) * L::kBytes);
  return _mm512_add_ps(Load16<L>(data, j), _mm512_loadu_ps(r));
}

// The residuals sum - s * q of sixteen elements, q = +-1 where kept (- where neg), else 0.
SIEVE_AVX512 void StoreResidual16(float* r, __m512 sum, __m512 s, __mmask16 keep, __mmask16 neg) {
  const __m512 q = _mm512_maskz_mov_ps(
      keep, _mm512_mask_blend_ps(neg, _mm512_set1_ps(1.0f), _mm512_set1_ps(-1.0f)));
  _mm512_storeu_ps(r, _mm512_sub_ps(sum, _mm512_mul_ps(s, q)));
}

// AddUnpack's byte permutation and multishift controls for a width w: byte b of a chunk's
// 64 is field b % 8 of group b / 8; the permutation brings the 8 bytes from the group's
// first byte on into its qword (spread), the multishift takes the field's w bits from
// bit (b % 8) * w of it (ctrl).
struct UnpackTable {
  alignas(64) uint8_t spread[64];
  alignas(64) uint8_t ctrl[64];
};
constexpr UnpackTable MakeUnpackTable(int w) {
  UnpackTable t{};
  for (int b = 0; b < 64; ++b) {
    const int from = (b / 8) * w + b % 8;
    t.spread[b] = static_cast<uint8_t>(from < 63 ? from : 63);
    t.ctrl[b] = static_cast<uint8_t>((b % 8) * w);
  }
  return t;
}
constexpr std::array<UnpackTable, 8> kUnpackTables =
    batch::PerWireWidth<UnpackTable>(MakeUnpackTable);

struct Avx512Ops {
  // Masks without a division (ternary_batch.h): MasksByReciprocal, MasksFeedbackByReciprocal.
  static constexpr bool kReciprocalMasks = true;
  // Each 64-bit lane carries one counter word in its low half (the high half is
  // don't-care: vpmuludq reads only the low halves), so a round is two
  // multiplies, two shuffles and two three-way XORs for eight octs. V groups of
  // eight octs run as V independent chains, interleaved round by round: one
  // chain's round waits on its multiplies' latency, V of them fill it.
  template <int V>
  SIEVE_AVX512 static void PhiloxChains(const PhiloxStream& rng, uint64_t oct0,
                                        uint32_t* words) {
    const __m512i m0 = _mm512_set1_epi64(kPhiloxMul0), m1 = _mm512_set1_epi64(kPhiloxMul1);
    // Rounds 1 and 2 from the stream's head (PhiloxFromHead): one multiply each.
    const PhiloxHead head = PhiloxHeadOf(rng);
    const __m512i round1_x2 = _mm512_set1_epi64(head.round1_x2);
    const __m512i round2_x0 = _mm512_set1_epi64(head.round2_x0);
    const __m512i round2_x2 = _mm512_set1_epi64(head.round2_x2);
    __m512i c0[V], c1[V], c2[V], c3[V];
    for (int v = 0; v < V; ++v) {
      const __m512i ctr = _mm512_add_epi32(_mm512_set1_epi64(static_cast<uint32_t>(oct0 + 8 * v)),
                                           _mm512_setr_epi64(0, 1, 2, 3, 4, 5, 6, 7));
      // Each 64-bit lane's low half holds the word; the high halves are don't-cares
      // (vpmuludq reads the low ones), as in the rounds below.
      const __m512i p0 = _mm512_mul_epu32(ctr, m0);
      const __m512i p1 = _mm512_mul_epu32(
          _mm512_xor_si512(_mm512_shuffle_epi32(p0, _MM_PERM_CDAB), round1_x2), m1);
      c0[v] = _mm512_xor_si512(_mm512_shuffle_epi32(p1, _MM_PERM_CDAB), round2_x0);
      c1[v] = p1;
      c2[v] = _mm512_xor_si512(p0, round2_x2);
      c3[v] = _mm512_set1_epi64(head.round2_w3);
    }
    uint32_t k0 = head.k0, k1 = head.k1;
    for (int round = 0; round < kPhiloxTailRounds;
         ++round, k0 += kPhiloxBump0, k1 += kPhiloxBump1) {
      const __m512i key0 = _mm512_set1_epi64(k0), key1 = _mm512_set1_epi64(k1);
      for (int v = 0; v < V; ++v) {
        const __m512i p0 = _mm512_mul_epu32(c0[v], m0), p1 = _mm512_mul_epu32(c2[v], m1);
        // The products' high halves to the low ones by a shuffle (vpshufd, port 5)
        // rather than a shift (port 0, where the multiplies run too).
        c0[v] = _mm512_ternarylogic_epi64(_mm512_shuffle_epi32(p1, _MM_PERM_CDAB), c1[v], key0,
                                          0x96);
        c1[v] = p1;
        c2[v] = _mm512_ternarylogic_epi64(_mm512_shuffle_epi32(p0, _MM_PERM_CDAB), c3[v], key1,
                                          0x96);
        c3[v] = p0;
      }
    }
    for (int v = 0; v < V; ++v) {
      // Lane l of lo01 holds words 0, 1 of oct l; of lo23 words 2, 3.
      const __m512i lo01 = _mm512_mask_blend_epi32(0xAAAA, c0[v], _mm512_slli_epi64(c1[v], 32));
      const __m512i lo23 = _mm512_mask_blend_epi32(0xAAAA, c2[v], _mm512_slli_epi64(c3[v], 32));
      uint32_t* w = words + 32 * v;
      _mm512_storeu_si512(w, _mm512_permutex2var_epi64(
                                 lo01, _mm512_setr_epi64(0, 8, 1, 9, 2, 10, 3, 11), lo23));
      _mm512_storeu_si512(w + 16, _mm512_permutex2var_epi64(
                                      lo01, _mm512_setr_epi64(4, 12, 5, 13, 6, 14, 7, 15), lo23));
    }
  }
  SIEVE_AVX512 static void Philox8(const PhiloxStream& rng, uint64_t oct0, uint32_t* words) {
    PhiloxChains<1>(rng, oct0, words);
  }
  // Not inlined into the quantizers: inlined, its sixteen chain registers met the
  // loops' hoisted constants and spilled (a quarter of its multiplies read the stack);
  // called, it keeps them all in registers, 10% faster per quantize (docs/bench/kernels.md).
  __attribute__((SIEVE_AVX512_TARGET, noinline)) static void Philox32(const PhiloxStream& rng,
                                                                      uint64_t oct0,
                                                                      uint32_t* words) {
    PhiloxChains<4>(rng, oct0, words);
  }

  template <class L>
  SIEVE_AVX512 static void Stage(const TernarySource& src, uint64_t j0, int n, float* g,
                                 float* sum) {
    int k = 0;
    if (src.idx != nullptr && src.bits != nullptr) {
      CompressKept<L>(src, j0, n, g);
      if (src.residual == nullptr) return;
      for (; k < n; k += 16) {  // g + e_prev, the last sixteen under a mask
        const __mmask16 t = n - k >= 16 ? 0xffff : static_cast<__mmask16>((1u << (n - k)) - 1);
        const __m512 v = _mm512_add_ps(_mm512_maskz_loadu_ps(t, g + k),
                                       _mm512_maskz_loadu_ps(t, src.residual + j0 + k));
        _mm512_mask_storeu_ps(sum + k, t, v);
        _mm512_mask_storeu_ps(g + k, t, Round16<L>(v));
      }
      return;
    }
    if (src.idx == nullptr) {
      for (; k + 16 <= n; k += 16) {
        batch::PrefetchPast(src.data,
                            (j0 + static_cast<uint64_t>(k) + batch::kPrefetchAhead) * L::kBytes);
        if (src.residual != nullptr) batch::PrefetchPast(src.residual + j0 + k, kPrefetchBytes);
        __m512 v = Load16<L>(src.data, j0 + static_cast<uint64_t>(k));
        if (src.residual != nullptr) {
          v = _mm512_add_ps(v, _mm512_loadu_ps(src.residual + j0 + k));
          _mm512_storeu_ps(sum + k, v);
          v = Round16<L>(v);
        }
        _mm512_storeu_ps(g + k, v);
      }
    } else if (std::is_same<L, TernaryF32>::value && src.residual == nullptr) {
      for (; k + 16 <= n; k += 16) {  // the mask's gather, 16 indices at a time
        batch::PrefetchPast(src.data, (src.idx[j0 + k] + batch::kPrefetchAhead) * L::kBytes);
        const __m512i ix = _mm512_loadu_si512(src.idx + j0 + k);
        const float* base = static_cast<const float*>(src.data);
        const __m512 lo = _mm512_castps256_ps512(
            _mm512_i64gather_ps(_mm512_cvtepu32_epi64(_mm512_castsi512_si256(ix)), base, 4));
        const __m256 hi = _mm512_i64gather_ps(
            _mm512_cvtepu32_epi64(_mm512_extracti64x4_epi64(ix, 1)), base, 4);
        _mm512_storeu_ps(g + k, _mm512_castpd_ps(_mm512_insertf64x4(
                                    _mm512_castps_pd(lo), _mm256_castps_pd(hi), 1)));
      }
    }
    batch::StageScalar<L>(src, j0, k, n, g, sum);
  }

  // t = trunc(min(|g|, cap) * lo) of 16 values (batch::ReciprocalLevel); keep = h < t,
  // maybe = (h - t is 0 or 1).
  SIEVE_AVX512 static void LevelMasks(__m512 gv, const batch::ReciprocalLevel& level,
                                      const uint16_t* h, __mmask16* keep, __mmask16* maybe) {
    const __m512 a = _mm512_min_ps(_mm512_set1_ps(level.cap), _mm512_abs_ps(gv));
    const __m512i t = _mm512_cvttps_epi32(_mm512_mul_ps(a, _mm512_set1_ps(level.lo)));
    const __m512i hv =
        _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(h)));
    *keep = _mm512_cmpgt_epi32_mask(t, hv);
    *maybe = _mm512_testn_epi32_mask(_mm512_sub_epi32(hv, t), _mm512_set1_epi32(~1));
  }

  // One scale, no division; neg = g's sign bit.
  SIEVE_AVX512 static void MasksByReciprocal(const float* g, const batch::ReciprocalLevel& level,
                                             const uint16_t* h, int n64, uint64_t* keep,
                                             uint64_t* neg, uint64_t* maybe) {
    for (int c = 0; c < n64; ++c) {
      __mmask16 k[4], n[4], m[4];
      for (int q = 0; q < 4; ++q) {
        const int i = 64 * c + 16 * q;
        batch::PrefetchPast(g + i, kPrefetchBytes);
        const __m512 gv = _mm512_loadu_ps(g + i);
        LevelMasks(gv, level, h + i, &k[q], &m[q]);
        n[q] = _mm512_cmplt_epi32_mask(_mm512_castps_si512(gv), _mm512_setzero_si512());
      }
      keep[c] = Join64(k), neg[c] = Join64(n), maybe[c] = Join64(m);
    }
  }

  // Any scales, dividing (TernaryLevel's own arithmetic): maybe = h < x exactly.
  SIEVE_AVX512 static void Masks(const float* g, const float* sc, float s, const uint16_t* h,
                                 int n64, uint64_t* keep, uint64_t* neg, uint64_t* maybe) {
    const __m512 zero = _mm512_setzero_ps(), one = _mm512_set1_ps(1.0f);
    const __m512 scale16 = _mm512_set1_ps(65536.0f), sv = _mm512_set1_ps(s);
    for (int c = 0; c < n64; ++c) {
      __mmask16 k[4], n[4], l[4];
      for (int q = 0; q < 4; ++q) {
        const int i = 64 * c + 16 * q;
        batch::PrefetchPast(g + i, kPrefetchBytes);
        const __m512 gv = _mm512_loadu_ps(g + i);
        const __m512 s16 = sc != nullptr ? _mm512_loadu_ps(sc + i) : sv;
        const __m512 x = _mm512_maskz_mul_ps(_mm512_cmp_ps_mask(s16, zero, _CMP_GT_OQ),
                                             _mm512_div_ps(_mm512_abs_ps(gv), s16), scale16);
        const __m512 hv = _mm512_cvtepi32_ps(
            _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(h + i))));
        k[q] = _mm512_cmp_ps_mask(_mm512_add_ps(hv, one), x, _CMP_LE_OQ);
        l[q] = _mm512_cmp_ps_mask(hv, x, _CMP_LT_OQ);
        n[q] = _mm512_cmp_ps_mask(gv, zero, _CMP_LT_OQ);
      }
      keep[c] = Join64(k), neg[c] = Join64(n), maybe[c] = Join64(l);
    }
  }

  // MasksByReciprocal of the sums' rounded values, each residual written with its coarse
  // code (q = 0 where maybe: ResolveTiesFeedback rewrites those that keep).
  template <class L>
  SIEVE_AVX512 static void MasksFeedbackByReciprocal(const void* data, float* res, uint64_t j0,
                                                     const batch::ReciprocalLevel& level, float s,
                                                     const uint16_t* h, int n64, uint64_t* keep,
                                                     uint64_t* neg, uint64_t* maybe) {
    const __m512 sv = _mm512_set1_ps(s);
    for (int c = 0; c < n64; ++c) {
      __mmask16 k[4], n[4], m[4];
      for (int q = 0; q < 4; ++q) {
        const int i = 64 * c + 16 * q;
        float* r = res + j0 + static_cast<uint64_t>(i);
        const __m512 sum = FeedbackSum16<L>(data, j0 + static_cast<uint64_t>(i), r);
        const __m512 gv = Round16<L>(sum);
        LevelMasks(gv, level, h + i, &k[q], &m[q]);
        // A kept value is nonzero: its sign bit is g < 0.
        n[q] = _mm512_cmplt_epi32_mask(_mm512_castps_si512(gv), _mm512_setzero_si512());
        StoreResidual16(r, sum, sv, k[q], n[q]);
      }
      keep[c] = Join64(k), neg[c] = Join64(n), maybe[c] = Join64(m);
    }
  }

  // Masks of Round(g + e_prev) fused with the residual update (ternary_batch.h), any
  // scales, dividing.
  template <class L>
  SIEVE_AVX512 static void MasksFeedback(const void* data, float* res, uint64_t j0, const float* sc,
                                         float s, const uint16_t* h, int n64, uint64_t* keep,
                                         uint64_t* neg, uint64_t* maybe) {
    const __m512 zero = _mm512_setzero_ps(), one = _mm512_set1_ps(1.0f);
    const __m512 scale16 = _mm512_set1_ps(65536.0f), sv = _mm512_set1_ps(s);
    for (int c = 0; c < n64; ++c) {
      __mmask16 k[4], n[4], l[4];
      for (int q = 0; q < 4; ++q) {
        const int i = 64 * c + 16 * q;
        float* r = res + j0 + static_cast<uint64_t>(i);
        const __m512 sum = FeedbackSum16<L>(data, j0 + static_cast<uint64_t>(i), r);
        const __m512 gv = Round16<L>(sum);
        const __m512 s16 = sc != nullptr ? _mm512_loadu_ps(sc + i) : sv;
        const __m512 x = _mm512_maskz_mul_ps(_mm512_cmp_ps_mask(s16, zero, _CMP_GT_OQ),
                                             _mm512_div_ps(_mm512_abs_ps(gv), s16), scale16);
        const __m512 hv = _mm512_cvtepi32_ps(
            _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(h + i))));
        const __mmask16 km = _mm512_cmp_ps_mask(_mm512_add_ps(hv, one), x, _CMP_LE_OQ);
        const __mmask16 nm = _mm512_cmp_ps_mask(gv, zero, _CMP_LT_OQ);
        k[q] = km, n[q] = nm;
        l[q] = _mm512_cmp_ps_mask(hv, x, _CMP_LT_OQ);
        StoreResidual16(r, sum, s16, km, nm);
      }
      keep[c] = Join64(k), neg[c] = Join64(n), maybe[c] = Join64(l);
    }
  }

  SIEVE_AVX512 static void Wire2(const uint64_t* keep, const uint64_t* neg, int n64,
                                 uint8_t* out) {
    const uint64_t even = 0x5555555555555555ull, odd = 0xAAAAAAAAAAAAAAAAull;
    for (int c = 0; c < n64; ++c) {
      const uint64_t k = keep[c], kn = keep[c] & neg[c];
      // Two's complement in 2 bits: +1 = 01, -1 = 11, 0 = 00 (bit 0 kept, bit 1 sign).
      const uint64_t lo = _pdep_u64(k, even) | _pdep_u64(kn, odd);
      const uint64_t hi = _pdep_u64(k >> 32, even) | _pdep_u64(kn >> 32, odd);
      std::memcpy(out + 16 * c, &lo, 8);
      std::memcpy(out + 16 * c + 8, &hi, 8);
    }
  }

  SIEVE_AVX512 static void LevelsCodes(const float* g, const float* sc, float s, float lv,
                                       int levels, const uint16_t* h, int n64, int8_t* q,
                                       uint64_t* tie) {
    if (sc == nullptr && s > 0.0f) return LevelsChunks<true>(g, sc, s, lv, levels, h, n64, q, tie);
    LevelsChunks<false>(g, sc, s, lv, levels, h, n64, q, tie);
  }
  template <bool kPositive>
  SIEVE_AVX512 static void LevelsChunks(const float* g, const float* sc, float s, float lv,
                                        int levels, const uint16_t* h, int n64, int8_t* q,
                                        uint64_t* tie) {
    const __m512 vl = _mm512_set1_ps(lv), s1 = _mm512_set1_ps(s);
    const __m512i top = _mm512_set1_epi32(levels);
    for (int c = 0; c < n64; ++c) {
      uint64_t ties = 0;
      for (int e = 0; e < 64; e += 16) {
        const int k = 64 * c + e;
        batch::PrefetchPast(g + k, kPrefetchBytes);
        __mmask16 t;
        const __m512i m = LevelsCode16<kPositive>(_mm512_loadu_ps(g + k),
                                                  sc != nullptr ? _mm512_loadu_ps(sc + k) : s1,
                                                  h + k, vl, top, &t);
        _mm_storeu_si128(reinterpret_cast<__m128i*>(q + k), _mm512_cvtepi32_epi8(m));
        ties |= static_cast<uint64_t>(t) << e;
      }
      tie[c] = ties;
    }
  }
  SIEVE_AVX512 static void Codes(const uint64_t* keep, const uint64_t* neg, int n64, int8_t* q) {
    const __m512i one = _mm512_set1_epi8(1), minus_one = _mm512_set1_epi8(-1);
    for (int c = 0; c < n64; ++c)
      _mm512_storeu_si512(q + 64 * c,
                          _mm512_maskz_mov_epi8(keep[c], _mm512_mask_blend_epi8(neg[c], one, minus_one)));
  }

  // A chunk (eight groups of w bytes): each group's bytes to its own qword
  // (vpermb), every element's w bits to its byte (vpmultishiftqb), then masked
  // and sign-extended.
  SIEVE_AVX512 static void AddUnpack(const uint8_t* wire, int w, int n64, bool accumulate,
                                     int8_t* work) {
    const UnpackTable& table = kUnpackTables[w - 1];
    const __m512i sp = _mm512_load_si512(table.spread), ct = _mm512_load_si512(table.ctrl);
    const __m512i field = _mm512_set1_epi8(static_cast<char>((1 << w) - 1));
    const __m512i sign = _mm512_set1_epi8(static_cast<char>(1 << (w - 1)));
    const __mmask64 bytes = ByteMask(8 * w);
    for (int c = 0; c < n64; ++c) {
      __m512i v = _mm512_maskz_loadu_epi8(bytes, wire + 8 * w * c);
      v = _mm512_multishift_epi64_epi8(ct, _mm512_permutexvar_epi8(sp, v));
      v = _mm512_and_si512(v, field);
      v = _mm512_sub_epi8(_mm512_xor_si512(v, sign), sign);
      if (accumulate) v = _mm512_add_epi8(v, _mm512_loadu_si512(work + 64 * c));
      _mm512_storeu_si512(work + 64 * c, v);
    }
  }

  // A chunk (w <= 6): pairs, quads and octs of w-bit fields merged by
  // multiply-adds, the eight groups' w bytes moved together (vpermb) and stored
  // under a byte mask.
  static constexpr int kMaxPackBits = 6;
  SIEVE_AVX512 static void Pack(const int8_t* work, int w, int n64, uint8_t* wire) {
    alignas(64) uint8_t gather[64];
    for (int b = 0; b < 64; ++b)
      gather[b] = static_cast<uint8_t>(b < 8 * w ? (b / w) * 8 + b % w : 0);
    const __m512i ga = _mm512_load_si512(gather);
    const __m512i field = _mm512_set1_epi8(static_cast<char>((1 << w) - 1));
    const __m512i m16 = _mm512_set1_epi16(static_cast<short>(1 | (1 << (w + 8))));
    const __m512i m32 = _mm512_set1_epi32(1 | (1 << (2 * w + 16)));
    const __m512i low32 = _mm512_set1_epi64(0xffffffffll);
    const __m128i count = _mm_cvtsi32_si128(4 * w);
    const __mmask64 bytes = ByteMask(8 * w);
    for (int c = 0; c < n64; ++c) {
      __m512i v = _mm512_and_si512(_mm512_loadu_si512(work + 64 * c), field);
      v = _mm512_madd_epi16(_mm512_maddubs_epi16(v, m16), m32);
      v = _mm512_or_si512(_mm512_and_si512(v, low32), _mm512_sll_epi64(_mm512_srli_epi64(v, 32), count));
      _mm512_mask_storeu_epi8(wire + 8 * w * c, bytes, _mm512_permutexvar_epi8(ga, v));
    }
  }

  SIEVE_AVX512 static void Residual(const float* sum, const float* sc, float s,
                                    const uint64_t* keep, const uint64_t* neg, int n64,
                                    float* res) {
    const __m512 sv = _mm512_set1_ps(s);
    for (int i = 0; i < 64 * n64; i += 16) {
      const __mmask16 k = static_cast<__mmask16>(keep[i / 64] >> (i % 64));
      const __mmask16 n = static_cast<__mmask16>(neg[i / 64] >> (i % 64));
      const __m512 s16 = sc != nullptr ? _mm512_loadu_ps(sc + i) : sv;
      StoreResidual16(res + i, _mm512_loadu_ps(sum + i), s16, k, n);
    }
  }

  SIEVE_AVX512 static void MaxMagnitude(const float* g, int n, uint32_t* m) {
    const __m512i abs_mask = _mm512_set1_epi32(0x7fffffff);
    __m512i acc = _mm512_setzero_si512();
    int k = 0;
    for (; k + 16 <= n; k += 16)
      acc = _mm512_max_epu32(acc, _mm512_and_si512(_mm512_loadu_si512(g + k), abs_mask));
    if (k < n)
      acc = _mm512_max_epu32(
          acc, _mm512_and_si512(_mm512_maskz_loadu_epi32(static_cast<__mmask16>((1u << (n - k)) - 1), g + k),
                                abs_mask));
    *m = std::max(*m, static_cast<uint32_t>(_mm512_reduce_max_epu32(acc)));
  }
};

// x / divisor in sixteen lanes, as the dequantizers divide (the AVX2 LaneDivisor's
// twin). A power-of-two divisor d divides as a multiply by 1 / d (exact): both round
// the same real number once, so the bits are the division's; an average over 2, 4 or
// 8 ranks then costs no vdivps (half of an in-cache dequantize's time otherwise).
struct LaneDivisor16 {
  SIEVE_AVX512 explicit LaneDivisor16(int divisor)
      : divisor(divisor),
        pow2(divisor > 1 && (divisor & (divisor - 1)) == 0),
        d(_mm512_set1_ps(static_cast<float>(divisor))),
        inv(_mm512_set1_ps(1.0f / static_cast<float>(divisor))) {}
  SIEVE_AVX512 __m512 Divide(__m512 x) const {
    if (pow2) return _mm512_mul_ps(x, inv);
    return divisor == 1 ? x : _mm512_div_ps(x, d);
  }
  int divisor;
  bool pow2;
  __m512 d, inv;
};

// The dequantized values of one scale block's int8 sums: s * q / divisor in sixteen
// lanes. A divisor that is neither 1 nor a power of two (an average over 3, 5, 6, 7 ...
// ranks) would cost a vdivps per sixteen sums; instead the block's values for q in
// [-16, 15] (a ternary sum over up to 15 ranks) are computed once into a 32-entry table,
// by the same two operations, and read with vpermt2ps. Sixteen sums with one outside
// the table divide as before.
struct BlockDequantizer {
  SIEVE_AVX512 explicit BlockDequantizer(int divisor)
      : divide(divisor), table(divisor != 1 && !divide.pow2) {}
  // Takes scale s for the sums that follow.
  SIEVE_AVX512 void Scale(float s) {
    sv = _mm512_set1_ps(s);
    if (!table) return;
    const __m512 lo_q =
        _mm512_setr_ps(-16, -15, -14, -13, -12, -11, -10, -9, -8, -7, -6, -5, -4, -3, -2, -1);
    const __m512 hi_q = _mm512_setr_ps(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    lo = divide.Divide(_mm512_mul_ps(sv, lo_q));
    hi = divide.Divide(_mm512_mul_ps(sv, hi_q));
  }
  // m (<= 16) values of sums[0 .. m).
  SIEVE_AVX512 __m512 Of(const int8_t* sums, int m = 16) const {
    const __m128i q = _mm_maskz_loadu_epi8(static_cast<__mmask16>((1u << m) - 1), sums);
    if (table) {
      const __m128i at = _mm_add_epi8(q, _mm_set1_epi8(16));  // q + 16, as unsigned bytes
      if (_mm_cmpge_epu8_mask(at, _mm_set1_epi8(32)) == 0)
        return _mm512_permutex2var_ps(lo, _mm512_cvtepu8_epi32(at), hi);
    }
    return divide.Divide(_mm512_mul_ps(sv, _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(q))));
  }
  const LaneDivisor16 divide;
  const bool table;
  __m512 sv, lo, hi;
};

// Sixteen results at out + i: streamed (non-temporal; out + i aligned to the
// vector) or stored; and m < 16 of them, under a mask.
template <class L>
SIEVE_AVX512 void Store16(void* out, size_t i, __m512 v, bool stream) {
  if (std::is_same<L, TernaryF32>::value) {
    float* o = static_cast<float*>(out) + i;
    if (stream) {
      _mm512_stream_ps(o, v);
    } else {
      _mm512_storeu_ps(o, v);
    }
  } else {
    __m256i* o = reinterpret_cast<__m256i*>(static_cast<uint16_t*>(out) + i);
    if (stream) {
      _mm256_stream_si256(o, Narrow16<L>(v));
    } else {
      _mm256_storeu_si256(o, Narrow16<L>(v));
    }
  }
}
template <class L>
SIEVE_AVX512 void StorePart16(void* out, size_t i, __m512 v, size_t m) {
  const __mmask16 k = static_cast<__mmask16>((1u << m) - 1);
  if (std::is_same<L, TernaryF32>::value) {
    _mm512_mask_storeu_ps(static_cast<float*>(out) + i, k, v);
  } else {
    _mm256_mask_storeu_epi16(static_cast<uint16_t*>(out) + i, k, Narrow16<L>(v));
  }
}

// Each scale block's run stores under a mask up to the first vector-aligned
// output, then whole vectors (streamed with stream, which needs the alignment;
// stored, none splits a cache line), then its last partial vector under a mask.
// An output that is not element-aligned is never streamed.
template <class L>
SIEVE_AVX512 void Dequantize(const int8_t* sums, size_t offset, size_t elems, size_t block,
                             const float* scales, int divisor, void* out, bool stream) {
  constexpr size_t kSize = std::is_same<L, TernaryF32>::value ? 4 : 2, kVector = 16 * kSize;
  const uintptr_t at = reinterpret_cast<uintptr_t>(out);
  stream = stream && at % kSize == 0;
  // i mod 16 of the vector-aligned outputs (0 where the output is not element-aligned).
  const size_t aligned = at % kSize == 0 ? (kVector - at % kVector) % kVector / kSize : 0;
  BlockDequantizer values(divisor);
  for (size_t i = 0; i < elems;) {
    const size_t j = offset + i;
    const size_t end = std::min(elems, i + (block - j % block));
    values.Scale(scales[j / block]);
    const size_t lead = std::min(end - i, (aligned + 16 - i % 16) % 16);
    if (lead > 0) StorePart16<L>(out, i, values.Of(sums + i, static_cast<int>(lead)), lead);
    for (i += lead; i + 16 <= end; i += 16) Store16<L>(out, i, values.Of(sums + i), stream);
    if (i < end) StorePart16<L>(out, i, values.Of(sums + i, static_cast<int>(end - i)), end - i);
    i = end;
  }
  if (stream) _mm_sfence();  // streamed stores ordered before what the caller does next
}

// [begin, end) in rounds of up to kScatterWords bitmap words: the round's kept
// values dequantized into a row (vals, one scale run at a time: the scale
// block is followed, never divided for), then each word's quarters expanded
// from the row (vexpandps / vpexpandw) with zeros between; only the range's
// partial first and last words store under a mask.
constexpr int kScatterWords = 16;

template <class L>
SIEVE_AVX512 void DequantizeScatter(const int8_t* sums, size_t offset, size_t block,
                                    const float* scales, int divisor, const uint64_t* bits,
                                    size_t begin, size_t end, void* out, bool stream) {
  stream = stream && reinterpret_cast<uintptr_t>(out) % 64 == 0;  // whole words then align
  BlockDequantizer values(divisor);
  size_t scaled = ~size_t{0};                                 // the scale block values holds
  size_t k = 0;                                               // sums[k]: kept element offset + k
  size_t kb = offset / block, left = block - offset % block;  // its scale block, elements left
  alignas(64) float vals[64 * kScatterWords + 16];
  alignas(64) uint16_t narrow[64 * kScatterWords + 32];
  uint64_t words[kScatterWords], ranges[kScatterWords];
  for (size_t j = begin; j < end;) {
    const size_t base = j & ~size_t{63};
    size_t stop;
    int nw;
    const int cnt =
        batch::ScatterRound<kScatterWords>(bits, j, end, &stop, &nw, words, ranges);
    for (int v = 0; v < cnt;) {  // the kept values, one scale run at a time
      const int run = static_cast<int>(std::min<size_t>(static_cast<size_t>(cnt - v), left));
      if (kb != scaled) values.Scale(scales[kb]), scaled = kb;
      for (int e = 0; e < run; e += 16)
        _mm512_storeu_ps(vals + v + e,
                         values.Of(sums + k + static_cast<size_t>(v + e), std::min(16, run - e)));
      v += run;
      left -= static_cast<size_t>(run);
      if (left == 0) ++kb, left = block;
    }
    if (!std::is_same<L, TernaryF32>::value)
      for (int v = 0; v < cnt; v += 16)
        _mm256_store_si256(reinterpret_cast<__m256i*>(narrow + v),
                           Narrow16<L>(_mm512_load_ps(vals + v)));
    int at = 0;
    for (int w = 0; w < nw; ++w) {
      const uint64_t word = words[w], range = ranges[w];
      const bool whole = range == ~uint64_t{0};
      if (std::is_same<L, TernaryF32>::value) {
        float* o = static_cast<float*>(out) + base + 64 * static_cast<size_t>(w);
        for (int q = 0; q < 4; ++q) {
          const __mmask16 m = static_cast<__mmask16>(word >> (16 * q));
          const __m512 x = _mm512_maskz_expand_ps(m, _mm512_loadu_ps(vals + at));
          if (whole && stream) {
            _mm512_stream_ps(o + 16 * q, x);
          } else if (whole) {
            _mm512_storeu_ps(o + 16 * q, x);
          } else {
            _mm512_mask_storeu_ps(o + 16 * q, static_cast<__mmask16>(range >> (16 * q)), x);
          }
          at += __builtin_popcount(m);
        }
      } else {
        uint16_t* o = static_cast<uint16_t*>(out) + base + 64 * static_cast<size_t>(w);
        for (int q = 0; q < 2; ++q) {
          const __mmask32 m = static_cast<__mmask32>(word >> (32 * q));
          const __m512i x = _mm512_maskz_expand_epi16(m, _mm512_loadu_si512(narrow + at));
          if (whole && stream) {
            _mm512_stream_si512(reinterpret_cast<__m512i*>(o + 32 * q), x);
          } else if (whole) {
            _mm512_storeu_si512(o + 32 * q, x);
          } else {
            _mm512_mask_storeu_epi16(o + 32 * q, static_cast<__mmask32>(range >> (32 * q)), x);
          }
          at += __builtin_popcount(m);
        }
      }
    }
    k += static_cast<size_t>(cnt);
    j = stop;
  }
  if (stream) _mm_sfence();
}

}  // namespace

SIEVE_AVX512_FN void AbsMaxAvx512(const TernarySource& src, size_t count, float* scales) {
  SIEVE_TK_BY_LOADER(src.dtype, (batch::AbsMax<Avx512Ops, L>(src, count, scales)));
}

SIEVE_AVX512_FN void QuantizePack2Avx512(const TernarySource& src, size_t offset, size_t elems,
                                         uint8_t* wire) {
  SIEVE_TK_BY_LOADER(src.dtype, (batch::QuantizePack2<Avx512Ops, L>(src, offset, elems, wire)));
}

SIEVE_AVX512_FN void QuantizeAddInt8Avx512(const TernarySource& src, size_t offset, size_t elems,
                                           const uint8_t* wire, int w, int8_t* work) {
  SIEVE_TK_BY_LOADER(src.dtype,
                     (batch::QuantizeAddInt8<Avx512Ops, L>(src, offset, elems, wire, w, work)));
}

SIEVE_AVX512_FN void FeedbackUpdateAvx512(const TernarySource& sent, size_t count,
                                          float* residual) {
  SIEVE_TK_BY_LOADER(sent.dtype, (batch::FeedbackUpdate<Avx512Ops, L>(sent, count, residual)));
}

SIEVE_AVX512_FN void QuantizeLevelsAvx512(const TernarySource& src, size_t offset, size_t elems,
                          void (*sink)(void*, size_t, const int8_t*, int), void* ctx) {
  SIEVE_TK_BY_LOADER(src.dtype,
                     (batch::QuantizeLevels<Avx512Ops, L>(src, offset, elems, sink, ctx)));
}

SIEVE_AVX512_FN void PackInt8Avx512(const int8_t* work, size_t elems, int w, uint8_t* wire) {
  batch::PackRange<Avx512Ops>(work, elems, w, wire);
}

SIEVE_AVX512_FN void UnpackInt8Avx512(const uint8_t* wire, size_t elems, int w, bool accumulate,
                                      int8_t* work) {
  batch::UnpackRange<Avx512Ops>(wire, elems, w, accumulate, work);
}

SIEVE_AVX512_FN void DequantizeInt8Avx512(DType dtype, const int8_t* sums, size_t offset,
                                          size_t elems, size_t block, const float* scales,
                                          int divisor, void* out, bool stream) {
  SIEVE_TK_BY_LOADER(dtype,
                     (Dequantize<L>(sums, offset, elems, block, scales, divisor, out, stream)));
}

SIEVE_AVX512_FN void DequantizeScatterInt8Avx512(DType dtype, const int8_t* sums, size_t offset,
                                                 size_t block, const float* scales, int divisor,
                                                 const uint64_t* bits, size_t begin, size_t end,
                                                 void* out, bool stream) {
  SIEVE_TK_BY_LOADER(dtype, (DequantizeScatter<L>(sums, offset, block, scales, divisor, bits, begin,
                                                  end, out, stream)));
}

SIEVE_AVX512_FN void PhiloxWordsAvx512(const PhiloxStream& rng, uint64_t oct0, size_t batches,
                                       uint32_t* words) {
  for (size_t b = 0; b < batches; ++b) Avx512Ops::Philox32(rng, oct0 + 32 * b, words + 128 * b);
}

#undef SIEVE_BY_LOADER

}  // namespace sieve::kernels::simd

#else  // not x86-64: never called (ActiveCpuIsa() is kPortable)

namespace sieve::kernels::simd {
void AbsMaxAvx512(const TernarySource&, size_t, float*) {}
void QuantizePack2Avx512(const TernarySource&, size_t, size_t, uint8_t*) {}
void QuantizeAddInt8Avx512(const TernarySource&, size_t, size_t, const uint8_t*, int, int8_t*) {}
void FeedbackUpdateAvx512(const TernarySource&, size_t, float*) {}
void QuantizeLevelsAvx512(const TernarySource&, size_t, size_t,
                    void (*)(void*, size_t, const int8_t*, int), void*) {}
void PackInt8Avx512(const int8_t*, size_t, int, uint8_t*) {}
void UnpackInt8Avx512(const uint8_t*, size_t, int, bool, int8_t*) {}
void DequantizeInt8Avx512(DType, const int8_t*, size_t, size_t, size_t, const float*, int, void*,
                          bool) {}
void DequantizeScatterInt8Avx512(DType, const int8_t*, size_t, size_t, const float*, int,
                                 const uint64_t*, size_t, size_t, void*, bool) {}
void PhiloxWordsAvx512(const PhiloxStream&, uint64_t, size_t, uint32_t*) {}
}  // namespace sieve::kernels::simd

#endif
