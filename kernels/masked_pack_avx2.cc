// AVX2 compress of 4-byte elements through the bitmap: eight dense lanes at a
// time permuted so the kept ones come first (kernels/compress_table.h) and
// stored whole, or under a mask of their count within eight elements of the
// end, so nothing past the packed elements is written. Full words copy, empty
// words are skipped. Compiled for baseline x86-64: only these functions carry the
// target (callers check ActiveCpuIsa()).
#include "kernels/masked_pack_simd.h"

#if defined(__x86_64__)
#include <immintrin.h>

#include "kernels/compress_table.h"

#define SIEVE_AVX2_FN __attribute__((target("avx2,popcnt")))

namespace sieve::kernels::simd {

SIEVE_AVX2_FN size_t MaskedCompressWords4Avx2(const void* in, const uint64_t* bits,
                                              size_t words, void* out) {
  // prefix + 8 - c: the first c lanes set (maskstore writes the lanes whose top bit is set).
  alignas(32) static const int32_t kPrefix[16] = {-1, -1, -1, -1, -1, -1, -1, -1,
                                                  0,  0,  0,  0,  0,  0,  0,  0};
  const __m256i shifts = _mm256_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28);
  const float* src = static_cast<const float*>(in);
  float* dst = static_cast<float*>(out);
  // vmaskmovps to memory is slow on AMD (microcoded): every chunk but those within
  // eight elements of the end stores all eight lanes, the next chunks' kept
  // elements overwriting the lanes past its own.
  size_t total = 0;
  for (size_t w = 0; w < words; ++w) total += static_cast<size_t>(__builtin_popcountll(bits[w]));
  size_t p = 0;
  for (size_t w = 0; w < words; ++w) {
    const uint64_t word = bits[w];
    const float* s = src + 64 * w;
    if (word == ~uint64_t{0}) {
      for (int c = 0; c < 64; c += 8) _mm256_storeu_ps(dst + p + c, _mm256_loadu_ps(s + c));
      p += 64;
      continue;
    }
    for (int c = 0; c < 64 && (word >> c) != 0; c += 8) {
      const uint32_t m = static_cast<uint32_t>(word >> c) & 0xffu;
      const int pc = __builtin_popcount(m);
      const __m256i order =
          _mm256_srlv_epi32(_mm256_set1_epi32(static_cast<int>(kCompress.v[m])), shifts);
      const __m256i keep =
          _mm256_loadu_si256(reinterpret_cast<const __m256i*>(kPrefix + 8 - pc));
      const __m256 packed = _mm256_permutevar8x32_ps(_mm256_loadu_ps(s + c), order);
      if (p + 8 <= total)  // lanes past pc: overwritten by kept elements still to come
        _mm256_storeu_ps(dst + p, packed);
      else
        _mm256_maskstore_ps(dst + p, keep, packed);
      p += static_cast<size_t>(pc);
    }
  }
  return p;
}

}  // namespace sieve::kernels::simd

#else  // not x86-64: never called (ActiveCpuIsa() is kPortable)

namespace sieve::kernels::simd {
size_t MaskedCompressWords4Avx2(const void*, const uint64_t*, size_t, void*) { return 0; }
}  // namespace sieve::kernels::simd

#endif
