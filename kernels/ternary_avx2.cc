// AVX2 / AVX-512 Philox 4x32-10 (eight counters per vector; the 32x32->64
// products from vpmuludq), the ternary comparison eight elements at a time, and the
// 2-bit packing from sign/non-zero lane masks. Compiled for baseline x86-64:
// only these functions carry the avx2 target, and callers dispatch at run time.
#include "kernels/ternary_simd.h"

#include "kernels/ternary.h"

#if defined(__x86_64__)
// GCC 12 warns about its own AVX-512 intrinsics (_mm512_undefined_* inside
// set1/shift helpers): a known false positive, silenced for this file only.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#define SIEVE_AVX2 __attribute__((target("avx2")))
#define SIEVE_AVX512 __attribute__((target("avx512f")))

namespace sieve::kernels::simd {

namespace {

// hi/lo halves of the 64-bit products a[l] * m (m the same in every lane).
SIEVE_AVX2 inline void MulHiLo(__m256i a, __m256i m, __m256i* hi, __m256i* lo) {
  __m256i even = _mm256_mul_epu32(a, m);                        // lanes 0, 2, 4, 6
  __m256i odd = _mm256_mul_epu32(_mm256_srli_epi64(a, 32), m);  // lanes 1, 3, 5, 7
  *lo = _mm256_blend_epi32(even, _mm256_slli_epi64(odd, 32), 0xAA);
  *hi = _mm256_blend_epi32(_mm256_srli_epi64(even, 32), odd, 0xAA);
}

// Spreads bit i of an 8-bit value to bit 2i.
inline uint32_t Spread8(uint32_t x) {
  x = (x | (x << 4)) & 0x0F0Fu;
  x = (x | (x << 2)) & 0x3333u;
  return (x | (x << 1)) & 0x5555u;
}

}  // namespace

SIEVE_AVX2 void PhiloxQuadsAvx2(const PhiloxStream& rng, uint64_t q0, int nquads,
                                uint32_t* words) {
  const __m256i m0 = _mm256_set1_epi32(static_cast<int>(0xD2511F53u));
  const __m256i m1 = _mm256_set1_epi32(static_cast<int>(0xCD9E8D57u));
  const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  for (int v = 0; v < nquads; v += 8) {
    // Counter word 0 is lo32(quad): a 32-bit add wraps exactly like the cast.
    __m256i c0 = _mm256_add_epi32(
        _mm256_set1_epi32(static_cast<int>(static_cast<uint32_t>(q0 + static_cast<uint64_t>(v)))),
        lane);
    __m256i c1 = _mm256_set1_epi32(static_cast<int>(rng.rank));
    __m256i c2 = _mm256_set1_epi32(static_cast<int>(static_cast<uint32_t>(rng.step)));
    __m256i c3 = _mm256_set1_epi32(static_cast<int>(static_cast<uint32_t>(rng.step >> 32)));
    uint32_t k0 = static_cast<uint32_t>(rng.seed), k1 = static_cast<uint32_t>(rng.seed >> 32);
    for (int round = 0; round < 10; ++round) {
      if (round > 0) {
        k0 += 0x9E3779B9u;
        k1 += 0xBB67AE85u;
      }
      __m256i hi0, lo0, hi1, lo1;
      MulHiLo(c0, m0, &hi0, &lo0);
      MulHiLo(c2, m1, &hi1, &lo1);
      c0 = _mm256_xor_si256(_mm256_xor_si256(hi1, c1), _mm256_set1_epi32(static_cast<int>(k0)));
      c1 = lo1;
      c2 = _mm256_xor_si256(_mm256_xor_si256(hi0, c3), _mm256_set1_epi32(static_cast<int>(k1)));
      c3 = lo0;
    }
    // Transpose the four word vectors (lane l = quad l) into quad-major order.
    __m256i t0 = _mm256_unpacklo_epi32(c0, c1), t1 = _mm256_unpackhi_epi32(c0, c1);
    __m256i t2 = _mm256_unpacklo_epi32(c2, c3), t3 = _mm256_unpackhi_epi32(c2, c3);
    __m256i u0 = _mm256_unpacklo_epi64(t0, t2), u1 = _mm256_unpackhi_epi64(t0, t2);
    __m256i u2 = _mm256_unpacklo_epi64(t1, t3), u3 = _mm256_unpackhi_epi64(t1, t3);
    __m256i* out = reinterpret_cast<__m256i*>(words + 4 * v);
    _mm256_storeu_si256(out + 0, _mm256_permute2x128_si256(u0, u1, 0x20));  // quads 0, 1
    _mm256_storeu_si256(out + 1, _mm256_permute2x128_si256(u2, u3, 0x20));  // quads 2, 3
    _mm256_storeu_si256(out + 2, _mm256_permute2x128_si256(u0, u1, 0x31));  // quads 4, 5
    _mm256_storeu_si256(out + 3, _mm256_permute2x128_si256(u2, u3, 0x31));  // quads 6, 7
  }
}

SIEVE_AVX2 void TernaryQuantizeRunAvx2(const float* g, const uint32_t* words, int n, float s,
                                       int32_t* q) {
  int i = 0;
  if (s > 0.0f) {  // else every q is 0, as TernaryQuantizeOne's (s > 0) term says
    const __m256 sv = _mm256_set1_ps(s), zero = _mm256_setzero_ps();
    const __m256 two_m24 = _mm256_set1_ps(5.9604644775390625e-08f);
    const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
    const __m256i one = _mm256_set1_epi32(1);
    for (; i + 8 <= n; i += 8) {
      __m256 gv = _mm256_loadu_ps(g + i);
      __m256i w = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(words + i));
      __m256 u = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_srli_epi32(w, 8)), two_m24);
      __m256 ratio = _mm256_div_ps(_mm256_and_ps(gv, abs_mask), sv);
      __m256i keep = _mm256_castps_si256(_mm256_cmp_ps(u, ratio, _CMP_LT_OQ));
      __m256i neg = _mm256_castps_si256(_mm256_cmp_ps(gv, zero, _CMP_LT_OQ));
      __m256i v = _mm256_and_si256(keep, _mm256_or_si256(neg, one));  // -1, 0 or +1
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(q + i), v);
    }
  }
  for (; i < n; ++i) q[i] = TernaryQuantizeOne(g[i], s, words[i]);
}

SIEVE_AVX2 void TernaryPack2Avx2(const int32_t* q, int n, uint8_t* wire) {
  const __m256i three = _mm256_set1_epi32(3), byte = _mm256_set1_epi32(0xff);
  const __m256i low_bytes = _mm256_setr_epi8(0, 4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1, -1,
                                             -1, -1, -1, 0, 4, 8, 12, -1, -1, -1, -1, -1, -1,
                                             -1, -1, -1, -1, -1, -1);
  int i = 0;
  // 32 elements: 2-bit codes (q & 3 is two's complement in 2 bits) narrowed to
  // bytes, four codes merged per 32-bit lane, the eight result bytes put in order.
  for (; i + 32 <= n; i += 32) {
    const __m256i* p = reinterpret_cast<const __m256i*>(q + i);
    __m256i a = _mm256_and_si256(_mm256_loadu_si256(p), three);
    __m256i b = _mm256_and_si256(_mm256_loadu_si256(p + 1), three);
    __m256i c = _mm256_and_si256(_mm256_loadu_si256(p + 2), three);
    __m256i d = _mm256_and_si256(_mm256_loadu_si256(p + 3), three);
    // Per 128-bit half: codes of elements a0-3 b0-3 c0-3 d0-3 | a4-7 b4-7 c4-7 d4-7.
    __m256i x = _mm256_packus_epi16(_mm256_packus_epi32(a, b), _mm256_packus_epi32(c, d));
    __m256i y = _mm256_or_si256(_mm256_or_si256(x, _mm256_srli_epi32(x, 6)),
                                _mm256_or_si256(_mm256_srli_epi32(x, 12), _mm256_srli_epi32(x, 18)));
    y = _mm256_shuffle_epi8(_mm256_and_si256(y, byte), low_bytes);
    __m128i out = _mm_unpacklo_epi8(_mm256_castsi256_si128(y), _mm256_extracti128_si256(y, 1));
    _mm_storel_epi64(reinterpret_cast<__m128i*>(wire + i / 4), out);
  }
  const __m256i zero = _mm256_setzero_si256();
  for (; i < n; i += 8) {
    __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q + i));
    uint32_t is_zero = static_cast<uint32_t>(
        _mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpeq_epi32(v, zero))));
    uint32_t neg = static_cast<uint32_t>(_mm256_movemask_ps(_mm256_castsi256_ps(v)));
    // Two's complement in 2 bits: +1 = 01, -1 = 11, 0 = 00 (bit 0 non-zero, bit 1 sign).
    uint32_t bits = Spread8(~is_zero & 0xffu) | (Spread8(neg) << 1);
    wire[i / 4] = static_cast<uint8_t>(bits);
    wire[i / 4 + 1] = static_cast<uint8_t>(bits >> 8);
  }
}

// AVX-512: each 64-bit lane carries one counter word in its low half (the high
// half is don't-care: vpmuludq reads only the low halves), so a round is two
// multiplies, two shifts and two three-way XORs for eight quads.
SIEVE_AVX512 void PhiloxQuadsAvx512(const PhiloxStream& rng, uint64_t q0, int nquads,
                                    uint32_t* words) {
  const __m512i m0 = _mm512_set1_epi64(0xD2511F53u), m1 = _mm512_set1_epi64(0xCD9E8D57u);
  const __m512i lane = _mm512_setr_epi64(0, 1, 2, 3, 4, 5, 6, 7);
  const __m512i interleave0 = _mm512_setr_epi64(0, 8, 1, 9, 2, 10, 3, 11);
  const __m512i interleave1 = _mm512_setr_epi64(4, 12, 5, 13, 6, 14, 7, 15);
  __m512i k0[10], k1[10];
  uint32_t a = static_cast<uint32_t>(rng.seed), b = static_cast<uint32_t>(rng.seed >> 32);
  for (int round = 0; round < 10; ++round, a += 0x9E3779B9u, b += 0xBB67AE85u) {
    k0[round] = _mm512_set1_epi64(a);
    k1[round] = _mm512_set1_epi64(b);
  }
  for (int v = 0; v < nquads; v += 8) {
    __m512i c0 = _mm512_add_epi32(
        _mm512_set1_epi64(static_cast<uint32_t>(q0 + static_cast<uint64_t>(v))), lane);
    __m512i c1 = _mm512_set1_epi64(rng.rank);
    __m512i c2 = _mm512_set1_epi64(static_cast<uint32_t>(rng.step));
    __m512i c3 = _mm512_set1_epi64(static_cast<uint32_t>(rng.step >> 32));
    for (int round = 0; round < 10; ++round) {
      __m512i p0 = _mm512_mul_epu32(c0, m0), p1 = _mm512_mul_epu32(c2, m1);
      c0 = _mm512_ternarylogic_epi64(_mm512_srli_epi64(p1, 32), c1, k0[round], 0x96);
      c1 = p1;
      c2 = _mm512_ternarylogic_epi64(_mm512_srli_epi64(p0, 32), c3, k1[round], 0x96);
      c3 = p0;
    }
    // Lane l of lo01 holds words 0, 1 of quad l; of lo23 words 2, 3.
    __m512i lo01 = _mm512_mask_blend_epi32(0xAAAA, c0, _mm512_slli_epi64(c1, 32));
    __m512i lo23 = _mm512_mask_blend_epi32(0xAAAA, c2, _mm512_slli_epi64(c3, 32));
    _mm512_storeu_si512(words + 4 * v, _mm512_permutex2var_epi64(lo01, interleave0, lo23));
    _mm512_storeu_si512(words + 4 * v + 16, _mm512_permutex2var_epi64(lo01, interleave1, lo23));
  }
}

}  // namespace sieve::kernels::simd

#else  // not x86-64: never called (ActiveCpuIsa() is kPortable)

namespace sieve::kernels::simd {
void PhiloxQuadsAvx2(const PhiloxStream&, uint64_t, int, uint32_t*) {}
void TernaryQuantizeRunAvx2(const float*, const uint32_t*, int, float, int32_t*) {}
void TernaryPack2Avx2(const int32_t*, int, uint8_t*) {}
void PhiloxQuadsAvx512(const PhiloxStream&, uint64_t, int, uint32_t*) {}
}  // namespace sieve::kernels::simd

#endif
