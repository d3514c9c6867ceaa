// The L-level codes of ternary_batch.h's LevelsCodes in AVX2 intrinsics for the AVX2
// policy (ternary_avx2.cc; the AVX-512 one has its sixteen-lane twin, LevelsCode16):
// eight elements a step, the same bits as the portable loop. Internal to kernels/.
#ifndef SIEVE_KERNELS_TERNARY_LEVELS_X86_H_
#define SIEVE_KERNELS_TERNARY_LEVELS_X86_H_

#include <immintrin.h>

#include <cstdint>

#include "kernels/ternary_batch.h"

namespace sieve::kernels::simd {

// Eight elements: y = fl(fl(|g| / s) * L) as in LevelsFraction, then in fixed point
// F = trunc(y * 2^16) (y < L <= 127, so y * 2^16 < 2^23 is exact and F its floor):
// floor(y) = F >> 16, floor(x) = F & 0xffff for x = frac(y) * 2^16, so
// keep (h + 1 <= x) is floor(x) > h and a tie (h < x < h + 1) is floor(x) == h with
// x not an integer (F != y * 2^16). kPositive: s > 0 known (one scale), no test per lane.
template <bool kPositive>
inline __attribute__((always_inline, target("avx2"))) __m256i LevelsCode8(__m256 gk, __m256 sk,
                                                                          const uint16_t* h,
                                                                          __m256 vl, __m256i top,
                                                                          uint32_t* tie) {
  const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
  const __m256 y = _mm256_mul_ps(_mm256_div_ps(_mm256_and_ps(gk, abs_mask), sk), vl);
  __m256 under = _mm256_cmp_ps(y, vl, _CMP_LT_OQ);  // false for NaN
  __m256 over = _mm256_cmp_ps(y, vl, _CMP_GE_OQ);
  if (!kPositive) {
    const __m256 positive = _mm256_cmp_ps(sk, _mm256_setzero_ps(), _CMP_GT_OQ);
    under = _mm256_and_ps(under, positive);
    over = _mm256_and_ps(over, positive);
  }
  const __m256 y16 = _mm256_and_ps(under, _mm256_mul_ps(y, _mm256_set1_ps(65536.0f)));
  const __m256i f = _mm256_cvttps_epi32(y16);
  const __m256i fx = _mm256_and_si256(f, _mm256_set1_epi32(0xffff));
  const __m256i hk = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(h)));
  const __m256i keep = _mm256_cmpgt_epi32(fx, hk);
  const __m256 fractional = _mm256_cmp_ps(_mm256_cvtepi32_ps(f), y16, _CMP_NEQ_UQ);
  *tie = static_cast<uint32_t>(_mm256_movemask_ps(
      _mm256_and_ps(_mm256_castsi256_ps(_mm256_cmpeq_epi32(fx, hk)), fractional)));
  __m256i m = _mm256_sub_epi32(_mm256_srli_epi32(f, 16), keep);  // + 1 where kept
  m = _mm256_blendv_epi8(m, top, _mm256_castps_si256(over));
  // Negated where g < 0 (g's sign bit; a -0 or NaN g has m = 0 either way).
  return _mm256_sign_epi32(m, _mm256_or_si256(_mm256_castps_si256(gk), _mm256_set1_epi32(1)));
}

template <bool kPositive>
inline __attribute__((always_inline, target("avx2"))) void LevelsChunksAvx2(
    const float* g, const float* sc, float s, float lv, int levels, const uint16_t* h, int n64,
    int8_t* q, uint64_t* tie) {
  const __m256 vl = _mm256_set1_ps(lv), s1 = _mm256_set1_ps(s);
  const __m256i top = _mm256_set1_epi32(levels);
  const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
  for (int c = 0; c < n64; ++c) {
    uint64_t ties = 0;
    for (int e4 = 0; e4 < 64; e4 += 32) {
      __m256i m[4];
      for (int v = 0; v < 4; ++v) {
        const int k = 64 * c + e4 + 8 * v;
        if (v % 2 == 0) batch::PrefetchPast(g + k, kPrefetchBytes);
        uint32_t t;
        m[v] = LevelsCode8<kPositive>(_mm256_loadu_ps(g + k),
                                      sc != nullptr ? _mm256_loadu_ps(sc + k) : s1, h + k, vl, top,
                                      &t);
        ties |= static_cast<uint64_t>(t) << (e4 + 8 * v);
      }
      const __m256i w =
          _mm256_packs_epi16(_mm256_packs_epi32(m[0], m[1]), _mm256_packs_epi32(m[2], m[3]));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(q + 64 * c + e4),
                          _mm256_permutevar8x32_epi32(w, order));
    }
    tie[c] = ties;
  }
}

// q[k] = the coarse code of element k (k < 64 * n64), tie[c] bit e = TernaryTie of
// element 64c + e; g, sc (or the one scale s when sc is null) and h as in
// batch::LevelsCodesPortable.
inline __attribute__((always_inline, target("avx2"))) void LevelsCodesAvx2(
    const float* g, const float* sc, float s, float lv, int levels, const uint16_t* h, int n64,
    int8_t* q, uint64_t* tie) {
  if (sc == nullptr && s > 0.0f)
    return LevelsChunksAvx2<true>(g, sc, s, lv, levels, h, n64, q, tie);
  LevelsChunksAvx2<false>(g, sc, s, lv, levels, h, n64, q, tie);
}

}  // namespace sieve::kernels::simd

#endif  // SIEVE_KERNELS_TERNARY_LEVELS_X86_H_
