// The AVX-512 and AVX2 float16/bfloat16 reduce (reduce_half.h). Compiled for baseline
// x86-64: only these functions carry the targets, and reduce.cc dispatches at run time.
// vcvtph2ps is exact; vcvtps2ph rounds to nearest even like FloatToHalf, but a NaN's
// payload differs, so a vector holding a NaN result is stored through FloatToHalf.
// bfloat16 rounds in integer lanes exactly as FloatToBf16 (quiet NaN included).
// max/min: vmaxps(a, b) / vminps(a, b) are a > b ? a : b / a < b ? a : b, the
// reference's select forms (ties and NaN give b).
#include "kernels/reduce_half.h"

#if defined(__x86_64__)
// GCC 12 warns about its own AVX-512 intrinsics (_mm512_undefined_* inside
// set1/shift helpers): a known false positive, silenced for this file only.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include <type_traits>

#include "kernels/combine_loops.h"

#define SIEVE_HALF512 inline __attribute__((target("avx512f,avx512bw,avx512vl,f16c")))
#define SIEVE_HALF256 inline __attribute__((target("avx2,f16c")))

namespace sieve::kernels::simd {

namespace {

struct F16 {};
struct Bf16 {};

// The scalar form of one element (tails), as the reference computes it.
template <class T>
inline float Widen1(uint16_t v) {
  return std::is_same<T, F16>::value ? HalfToFloat(v) : Bf16ToFloat(v);
}
template <class T>
inline uint16_t Narrow1(float f) {
  return std::is_same<T, F16>::value ? FloatToHalf(f) : FloatToBf16(f);
}
inline float Combine1(RedOp op, float a, float b) {
  switch (op) {
    case RedOp::kProd:
      return a * b;
    case RedOp::kMax:
      return a > b ? a : b;
    case RedOp::kMin:
      return a < b ? a : b;
    default:
      return a + b;
  }
}

template <class T>
SIEVE_HALF512 __m512 Widen16(const void* p) {
  const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
  if (std::is_same<T, F16>::value) return _mm512_cvtph_ps(h);
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}

template <class T>
SIEVE_HALF512 void Narrow16(__m512 v, uint16_t* out) {
  const __mmask16 nan = _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
  if (std::is_same<T, F16>::value) {
    if (nan == 0) {
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out),
                          _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
      return;
    }
    alignas(64) float f[16];
    _mm512_store_ps(f, v);
    for (int k = 0; k < 16; ++k) out[k] = FloatToHalf(f[k]);
    return;
  }
  const __m512i x = _mm512_castps_si512(v);
  __m512i r = _mm512_add_epi32(_mm512_add_epi32(x, _mm512_set1_epi32(0x7fff)),
                               _mm512_and_si512(_mm512_srli_epi32(x, 16), _mm512_set1_epi32(1)));
  r = _mm512_mask_or_epi32(_mm512_srli_epi32(r, 16), nan, _mm512_srli_epi32(x, 16),
                           _mm512_set1_epi32(0x40));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(out), _mm512_cvtepi32_epi16(r));
}

template <class T, int kOp>
SIEVE_HALF512 void Loop512(const uint16_t* a, const void* b, uint16_t* out, size_t n) {
  const auto* bytes_b = static_cast<const unsigned char*>(b);
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512 x = Widen16<T>(a + i), y = Widen16<T>(bytes_b + 2 * i);
    __m512 r;
    if (kOp == 1) {
      r = _mm512_mul_ps(x, y);
    } else if (kOp == 2) {
      r = _mm512_max_ps(x, y);
    } else if (kOp == 3) {
      r = _mm512_min_ps(x, y);
    } else {
      r = _mm512_add_ps(x, y);
    }
    Narrow16<T>(r, out + i);
  }
  for (; i < n; ++i)
    out[i] = Narrow1<T>(Combine1(static_cast<RedOp>(kOp), Widen1<T>(a[i]),
                                 Widen1<T>(combine::LoadAt<uint16_t>(b, i))));
}

template <class T>
SIEVE_HALF256 __m256 Widen8(const void* p) {
  const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  if (std::is_same<T, F16>::value) return _mm256_cvtph_ps(h);
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}

template <class T>
SIEVE_HALF256 void Narrow8(__m256 v, uint16_t* out) {
  const __m256 nan = _mm256_cmp_ps(v, v, _CMP_UNORD_Q);
  if (std::is_same<T, F16>::value) {
    if (_mm256_movemask_ps(nan) == 0) {
      _mm_storeu_si128(reinterpret_cast<__m128i*>(out),
                       _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
      return;
    }
    alignas(32) float f[8];
    _mm256_store_ps(f, v);
    for (int k = 0; k < 8; ++k) out[k] = FloatToHalf(f[k]);
    return;
  }
  const __m256i x = _mm256_castps_si256(v);
  __m256i r = _mm256_add_epi32(_mm256_add_epi32(x, _mm256_set1_epi32(0x7fff)),
                               _mm256_and_si256(_mm256_srli_epi32(x, 16), _mm256_set1_epi32(1)));
  r = _mm256_srli_epi32(r, 16);
  const __m256i quiet = _mm256_or_si256(_mm256_srli_epi32(x, 16), _mm256_set1_epi32(0x40));
  r = _mm256_blendv_epi8(r, quiet, _mm256_castps_si256(nan));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(out),
                   _mm_packus_epi32(_mm256_castsi256_si128(r), _mm256_extracti128_si256(r, 1)));
}

template <class T, int kOp>
SIEVE_HALF256 void Loop256(const uint16_t* a, const void* b, uint16_t* out, size_t n) {
  const auto* bytes_b = static_cast<const unsigned char*>(b);
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 x = Widen8<T>(a + i), y = Widen8<T>(bytes_b + 2 * i);
    __m256 r;
    if (kOp == 1) {
      r = _mm256_mul_ps(x, y);
    } else if (kOp == 2) {
      r = _mm256_max_ps(x, y);
    } else if (kOp == 3) {
      r = _mm256_min_ps(x, y);
    } else {
      r = _mm256_add_ps(x, y);
    }
    Narrow8<T>(r, out + i);
  }
  for (; i < n; ++i)
    out[i] = Narrow1<T>(Combine1(static_cast<RedOp>(kOp), Widen1<T>(a[i]),
                                 Widen1<T>(combine::LoadAt<uint16_t>(b, i))));
}

// op -> kOp (avg sums: averaging divides afterwards), dtype -> T.
#define SIEVE_HALF_DISPATCH(LOOP)                               \
  do {                                                          \
    const auto* ta = static_cast<const uint16_t*>(a);           \
    auto* to = static_cast<uint16_t*>(out);                     \
    const int k = op == RedOp::kAvg ? 0 : static_cast<int>(op); \
    if (dtype == DType::kFloat16) {                             \
      if (k == 1) return LOOP<F16, 1>(ta, b, to, n);            \
      if (k == 2) return LOOP<F16, 2>(ta, b, to, n);            \
      if (k == 3) return LOOP<F16, 3>(ta, b, to, n);            \
      return LOOP<F16, 0>(ta, b, to, n);                        \
    }                                                           \
    if (k == 1) return LOOP<Bf16, 1>(ta, b, to, n);             \
    if (k == 2) return LOOP<Bf16, 2>(ta, b, to, n);             \
    if (k == 3) return LOOP<Bf16, 3>(ta, b, to, n);             \
    return LOOP<Bf16, 0>(ta, b, to, n);                         \
  } while (0)

}  // namespace

__attribute__((target("avx512f,avx512bw,avx512vl,f16c"), flatten)) void ReduceHalfAvx512(
    DType dtype, RedOp op, const void* a, const void* b, void* out, size_t n) {
  SIEVE_HALF_DISPATCH(Loop512);
}

__attribute__((target("avx2,f16c"), flatten)) void ReduceHalfAvx2(DType dtype, RedOp op,
                                                                    const void* a, const void* b,
                                                                    void* out, size_t n) {
  SIEVE_HALF_DISPATCH(Loop256);
}

#undef SIEVE_HALF_DISPATCH

}  // namespace sieve::kernels::simd

#else  // not x86-64: never called (ActiveCpuIsa() is kPortable)

namespace sieve::kernels::simd {
void ReduceHalfAvx512(DType, RedOp, const void*, const void*, void*, size_t) {}
void ReduceHalfAvx2(DType, RedOp, const void*, const void*, void*, size_t) {}
}  // namespace sieve::kernels::simd

#endif
