// The L-level codes of ternary_batch.h's LevelsCodes in AVX2 intrinsics, shared by
// the AVX2 and the AVX-512 policies (ternary_avx2.cc, ternary_avx512.cc): eight
// elements a step, the same bits as the portable loop. Internal to kernels/.
#ifndef SIEVE_KERNELS_TERNARY_LEVELS_X86_H_
#define SIEVE_KERNELS_TERNARY_LEVELS_X86_H_

#include <immintrin.h>

#include <cstdint>

namespace sieve::kernels::simd {

// q[k] = the coarse code of element k (k < 64 * n64), tie[c] bit e = TernaryTie of
// element 64c + e; g, sc (or the one scale s when sc is null) and h as in
// batch::LevelsCodes.
inline __attribute__((always_inline, target("avx2"))) void LevelsCodesAvx2(
    const float* g, const float* sc, float s, float lv, int levels, const uint16_t* h, int n64,
    int8_t* q, uint64_t* tie) {
  const __m256 zero = _mm256_setzero_ps(), one = _mm256_set1_ps(1.0f);
  const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
  const __m256 vl = _mm256_set1_ps(lv), v16 = _mm256_set1_ps(65536.0f);
  const __m256i top = _mm256_set1_epi32(levels);
  const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
  const __m256 s1 = _mm256_set1_ps(s);
  for (int c = 0; c < n64; ++c) {
    uint64_t ties = 0;
    for (int e4 = 0; e4 < 64; e4 += 32) {
      __m256i m[4];
      for (int v = 0; v < 4; ++v) {
        const int k = 64 * c + e4 + 8 * v;
        const __m256 gk = _mm256_loadu_ps(g + k);
        const __m256 sk = sc != nullptr ? _mm256_loadu_ps(sc + k) : s1;
        const __m256 y = _mm256_mul_ps(_mm256_div_ps(_mm256_and_ps(gk, abs_mask), sk), vl);
        const __m256 positive = _mm256_cmp_ps(sk, zero, _CMP_GT_OQ);
        const __m256 in = _mm256_and_ps(_mm256_and_ps(positive, _mm256_cmp_ps(y, vl, _CMP_LT_OQ)), y);
        const __m256 over = _mm256_and_ps(positive, _mm256_cmp_ps(y, vl, _CMP_GE_OQ));
        const __m256i whole = _mm256_cvttps_epi32(in);  // floor: 0 <= in < L
        const __m256 x = _mm256_mul_ps(_mm256_sub_ps(in, _mm256_cvtepi32_ps(whole)), v16);
        const __m256 hk = _mm256_cvtepi32_ps(
            _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(h + k))));
        const __m256 keep = _mm256_cmp_ps(_mm256_add_ps(hk, one), x, _CMP_LE_OQ);
        const __m256 tie = _mm256_andnot_ps(keep, _mm256_cmp_ps(hk, x, _CMP_LT_OQ));
        ties |= static_cast<uint64_t>(static_cast<uint32_t>(_mm256_movemask_ps(tie)))
                << (e4 + 8 * v);
        __m256i mk = _mm256_sub_epi32(whole, _mm256_castps_si256(keep));  // + 1 where kept
        mk = _mm256_blendv_epi8(mk, top, _mm256_castps_si256(over));
        // Negated where g < 0 (g's sign bit; a -0 or NaN g has m = 0 either way).
        m[v] = _mm256_sign_epi32(mk, _mm256_or_si256(_mm256_castps_si256(gk),
                                                     _mm256_set1_epi32(1)));
      }
      const __m256i w = _mm256_packs_epi16(_mm256_packs_epi32(m[0], m[1]),
                                           _mm256_packs_epi32(m[2], m[3]));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(q + 64 * c + e4),
                          _mm256_permutevar8x32_epi32(w, order));
    }
    tie[c] = ties;
  }
}

}  // namespace sieve::kernels::simd

#endif  // SIEVE_KERNELS_TERNARY_LEVELS_X86_H_
