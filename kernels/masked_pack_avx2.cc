// AVX2 compress of 4-byte elements through the bitmap: eight dense lanes at a
// time permuted so the kept ones come first (kernels/compress_table.h) and
// stored whole, or under a mask of their count within eight elements of the
// end, so nothing past the packed elements is written. Full words copy, empty
// words are skipped. And the 4-byte gather by index (alone, or summed with the
// received partial sums), eight indices at a time. Compiled for baseline x86-64: only these
// functions carry the target (callers check ActiveCpuIsa()).
#include "kernels/masked_pack_simd.h"
#include "kernels/prefetch.h"

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

namespace {

// Eight kept indices at a time: when they lie within 16 positions of the first
// (ascending indices of a dense mask: nearly always at 90%, about half the groups at
// 50%), masked loads of that window (nothing past the largest index is read), a lane
// permute of each half and a blend; else a gather (indices below 2^31), else element
// by element. Input, indices and partial sums are asked for kPrefetchBytes ahead.
// kAdd: out[k] = in[idx[k]] + wire[k] (float32) as the vector leaves.
template <bool kAdd>
SIEVE_AVX2_FN inline size_t Gather4(const void* in, const uint32_t* idx, const void* wire,
                                    size_t nnz, void* out) {
  alignas(32) static const int32_t kFirst[16] = {-1, -1, -1, -1, -1, -1, -1, -1,
                                                 0,  0,  0,  0,  0,  0,  0,  0};
  const float* src = static_cast<const float*>(in);
  const float* add = static_cast<const float*>(wire);
  float* dst = static_cast<float*>(out);
  const __m256i seven = _mm256_set1_epi32(7);
  size_t k = 0;
  for (; k + 8 <= nnz; k += 8) {
    const __m256i ix = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(idx + k));
    const uint32_t base = idx[k];
    PrefetchPast(src + base, kPrefetchBytes);  // about the next 1024 positions' lines
    PrefetchPast(idx + k, kPrefetchBytes);
    if (kAdd) PrefetchPast(add + k, kPrefetchBytes);
    const __m256i rel = _mm256_sub_epi32(ix, _mm256_set1_epi32(static_cast<int>(base)));
    const uint32_t last = idx[k + 7] - base;  // the largest relative index when ascending
    const __m256i lastv = _mm256_set1_epi32(static_cast<int>(last));
    __m256 v;
    if (last < 16 &&
        _mm256_movemask_epi8(_mm256_cmpeq_epi32(_mm256_max_epu32(rel, lastv), lastv)) == -1) {
      const int span = static_cast<int>(last) + 1;  // positions from base: 1 .. 16
      const int lo_count = span < 8 ? span : 8, hi_count = span - lo_count;
      const __m256i lo_lanes =
          _mm256_loadu_si256(reinterpret_cast<const __m256i*>(kFirst + 8 - lo_count));
      const __m256i hi_lanes =
          _mm256_loadu_si256(reinterpret_cast<const __m256i*>(kFirst + 8 - hi_count));
      const __m256 lo = _mm256_maskload_ps(src + base, lo_lanes);
      const __m256 hi = _mm256_maskload_ps(src + base + 8, hi_lanes);
      v = _mm256_blendv_ps(_mm256_permutevar8x32_ps(lo, rel), _mm256_permutevar8x32_ps(hi, rel),
                           _mm256_castsi256_ps(_mm256_cmpgt_epi32(rel, seven)));
    } else if (_mm256_movemask_ps(_mm256_castsi256_ps(ix)) == 0) {
      v = _mm256_i32gather_ps(src, ix, 4);
    } else {
      alignas(32) float g[8];
      for (int l = 0; l < 8; ++l) g[l] = src[idx[k + l]];
      v = _mm256_load_ps(g);
    }
    if (kAdd) v = _mm256_add_ps(v, _mm256_loadu_ps(add + k));
    _mm256_storeu_ps(dst + k, v);
  }
  return k;
}

}  // namespace

SIEVE_AVX2_FN size_t MaskedGather4Avx2(const void* in, const uint32_t* idx, size_t nnz, void* out) {
  return Gather4<false>(in, idx, nullptr, nnz, out);
}

SIEVE_AVX2_FN size_t MaskedGatherSum4Avx2(const void* in, const uint32_t* idx, const void* wire,
                                          size_t nnz, void* out) {
  return Gather4<true>(in, idx, wire, nnz, out);
}

}  // namespace sieve::kernels::simd

#else  // not x86-64: never called (ActiveCpuIsa() is kPortable)

namespace sieve::kernels::simd {
size_t MaskedCompressWords4Avx2(const void*, const uint64_t*, size_t, void*) { return 0; }
size_t MaskedGather4Avx2(const void*, const uint32_t*, size_t, void*) { return 0; }
size_t MaskedGatherSum4Avx2(const void*, const uint32_t*, const void*, size_t, void*) { return 0; }
}  // namespace sieve::kernels::simd

#endif
