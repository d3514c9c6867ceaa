// AVX-512 masked unpack and compress. Unpack: per bitmap word, full words copy, empty words zero,
// and mixed words expand (vpexpand) popcount-many packed elements into the set
// lanes of each vector with the clear lanes zeroed, so every output byte is
// written once. The packed side is read with fault-suppressing masked loads, so
// nothing past the last packed element is touched. Compress (the pack through
// the bitmap) is the mirror: full words copy, mixed words vpcompress their
// kept lanes, loaded under the word's mask.
#include "kernels/masked_pack_simd.h"
#include "kernels/prefetch.h"

#if defined(__x86_64__)
// GCC 12 warns about its own AVX-512 intrinsics (_mm512_undefined_* inside
// helpers): a known false positive, silenced for this file only.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#define SIEVE_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512vbmi2,popcnt")))

namespace sieve::kernels::simd {

namespace {

// Low `n` bits set, n <= 64.
inline uint64_t LowBits(int n) { return n >= 64 ? ~uint64_t{0} : (uint64_t{1} << n) - 1; }

// One bitmap word of E-byte elements: 64 / (64 / E) vectors of 64 / E lanes.
template <int E>
SIEVE_AVX512 inline size_t ExpandWord(const char* src, uint64_t word, char* o) {
  constexpr int kLanes = 64 / E;
  size_t p = 0;
  for (int c = 0; c < 64 / kLanes; ++c) {
    const uint64_t m = kLanes == 64 ? word : (word >> (c * kLanes)) & LowBits(kLanes);
    const int pc = __builtin_popcountll(m);
    const uint64_t take = LowBits(pc);
    const char* s = src + p * E;
    __m512i v;
    if constexpr (E == 1) {
      v = _mm512_maskz_expand_epi8(m, _mm512_maskz_loadu_epi8(take, s));
    } else if constexpr (E == 2) {
      v = _mm512_maskz_expand_epi16(static_cast<__mmask32>(m),
                                    _mm512_maskz_loadu_epi16(static_cast<__mmask32>(take), s));
    } else if constexpr (E == 4) {
      v = _mm512_maskz_expand_epi32(static_cast<__mmask16>(m),
                                    _mm512_maskz_loadu_epi32(static_cast<__mmask16>(take), s));
    } else {
      v = _mm512_maskz_expand_epi64(static_cast<__mmask8>(m),
                                    _mm512_maskz_loadu_epi64(static_cast<__mmask8>(take), s));
    }
    _mm512_storeu_si512(o + c * 64, v);
    p += static_cast<size_t>(pc);
  }
  return p;
}

template <int E>
SIEVE_AVX512 size_t UnpackWords(const char* src, const uint64_t* bits, size_t words, char* out) {
  const __m512i zero = _mm512_setzero_si512();
  size_t p = 0;
  for (size_t w = 0; w < words; ++w) {
    const uint64_t word = bits[w];
    char* o = out + w * 64 * E;
    if (word == ~uint64_t{0}) {
      for (int c = 0; c < E; ++c)
        _mm512_storeu_si512(o + c * 64, _mm512_loadu_si512(src + p * E + c * 64));
      p += 64;
    } else if (word == 0) {
      for (int c = 0; c < E; ++c) _mm512_storeu_si512(o + c * 64, zero);
    } else {
      p += ExpandWord<E>(src + p * E, word, o);
    }
  }
  return p;
}

// One bitmap word of E-byte elements: each vector's kept lanes loaded (masked:
// nothing else is read), compressed and stored under a mask of their count.
template <int E>
SIEVE_AVX512 inline size_t CompressWord(const char* in, uint64_t word, char* o) {
  constexpr int kLanes = 64 / E;
  size_t p = 0;
  for (int c = 0; c < 64 / kLanes; ++c) {
    const uint64_t m = kLanes == 64 ? word : (word >> (c * kLanes)) & LowBits(kLanes);
    const int pc = __builtin_popcountll(m);
    const uint64_t take = LowBits(pc);
    const char* s = in + c * 64;
    char* d = o + p * E;
    if constexpr (E == 1) {
      _mm512_mask_storeu_epi8(d, take, _mm512_maskz_compress_epi8(m, _mm512_maskz_loadu_epi8(m, s)));
    } else if constexpr (E == 2) {
      const __mmask32 k = static_cast<__mmask32>(m);
      _mm512_mask_storeu_epi16(d, static_cast<__mmask32>(take),
                               _mm512_maskz_compress_epi16(k, _mm512_maskz_loadu_epi16(k, s)));
    } else if constexpr (E == 4) {
      const __mmask16 k = static_cast<__mmask16>(m);
      _mm512_mask_storeu_epi32(d, static_cast<__mmask16>(take),
                               _mm512_maskz_compress_epi32(k, _mm512_maskz_loadu_epi32(k, s)));
    } else {
      const __mmask8 k = static_cast<__mmask8>(m);
      _mm512_mask_storeu_epi64(d, static_cast<__mmask8>(take),
                               _mm512_maskz_compress_epi64(k, _mm512_maskz_loadu_epi64(k, s)));
    }
    p += static_cast<size_t>(pc);
  }
  return p;
}

template <int E>
SIEVE_AVX512 size_t CompressWords(const char* in, const uint64_t* bits, size_t words, char* out) {
  size_t p = 0;
  for (size_t w = 0; w < words; ++w) {
    const uint64_t word = bits[w];
    const char* i = in + w * 64 * E;
    if (word == ~uint64_t{0}) {
      for (int c = 0; c < E; ++c)
        _mm512_storeu_si512(out + p * E + c * 64, _mm512_loadu_si512(i + c * 64));
      p += 64;
    } else if (word != 0) {
      p += CompressWord<E>(i, word, out + p * E);
    }
  }
  return p;
}

}  // namespace

size_t MaskedCompressWordsAvx512(size_t elem_size, const void* in, const uint64_t* bits,
                                 size_t words, void* out) {
  const char* src = static_cast<const char*>(in);
  char* dst = static_cast<char*>(out);
  switch (elem_size) {
    case 1: return CompressWords<1>(src, bits, words, dst);
    case 2: return CompressWords<2>(src, bits, words, dst);
    case 4: return CompressWords<4>(src, bits, words, dst);
    default: return CompressWords<8>(src, bits, words, dst);
  }
}

size_t MaskedUnpackWordsAvx512(size_t elem_size, const void* packed, const uint64_t* bits,
                               size_t words, void* out) {
  const char* src = static_cast<const char*>(packed);
  char* dst = static_cast<char*>(out);
  switch (elem_size) {
    case 1: return UnpackWords<1>(src, bits, words, dst);
    case 2: return UnpackWords<2>(src, bits, words, dst);
    case 4: return UnpackWords<4>(src, bits, words, dst);
    default: return UnpackWords<8>(src, bits, words, dst);
  }
}

// Sixteen kept indices at a time: when they lie between the first and the last and
// those are within 32 positions (ascending indices of a dense mask: nearly always at
// 90%), two masked loads of that window and one lane permute; else a gather (indices
// below 2^31), else element by element. Input, indices and partial sums are asked for
// kPrefetchBytes ahead. kAdd: out[k] = in[idx[k]] + wire[k] (float32) as the vector leaves.
template <bool kAdd>
SIEVE_AVX512 inline size_t Gather4(const void* in, const uint32_t* idx, const void* wire,
                                   size_t nnz, void* out) {
  const float* src = static_cast<const float*>(in);
  const float* add = static_cast<const float*>(wire);
  float* dst = static_cast<float*>(out);
  size_t k = 0;
  for (; k + 16 <= nnz; k += 16) {
    const __m512i ix = _mm512_loadu_si512(idx + k);
    const uint32_t base = idx[k];
    PrefetchPast(src + base, kPrefetchBytes);  // about the next 1024 positions' lines
    PrefetchPast(idx + k, kPrefetchBytes);
    if (kAdd) PrefetchPast(add + k, kPrefetchBytes);
    const __m512i rel = _mm512_sub_epi32(ix, _mm512_set1_epi32(static_cast<int>(base)));
    __m512 v;
    const uint32_t last = idx[k + 15] - base;  // the largest relative index when ascending
    if (last < 32 &&
        _mm512_cmpgt_epu32_mask(rel, _mm512_set1_epi32(static_cast<int>(last))) == 0) {
      // Positions base .. base+last only: nothing past the largest index is read.
      const int span = static_cast<int>(last) + 1;
      const __m512 lo = _mm512_maskz_loadu_ps(static_cast<__mmask16>(LowBits(span)), src + base);
      const __m512 hi = _mm512_maskz_loadu_ps(
          static_cast<__mmask16>(LowBits(span > 16 ? span - 16 : 0)), src + base + 16);
      v = _mm512_permutex2var_ps(lo, rel, hi);
    } else if (_mm512_cmplt_epi32_mask(ix, _mm512_setzero_si512()) == 0) {
      v = _mm512_i32gather_ps(ix, src, 4);
    } else {
      alignas(64) float g[16];
      for (int l = 0; l < 16; ++l) g[l] = src[idx[k + l]];
      v = _mm512_load_ps(g);
    }
    if (kAdd) v = _mm512_add_ps(v, _mm512_loadu_ps(add + k));
    _mm512_storeu_ps(dst + k, v);
  }
  return k;
}

SIEVE_AVX512 size_t MaskedGather4Avx512(const void* in, const uint32_t* idx, size_t nnz,
                                        void* out) {
  return Gather4<false>(in, idx, nullptr, nnz, out);
}

SIEVE_AVX512 size_t MaskedGatherSum4Avx512(const void* in, const uint32_t* idx, const void* wire,
                                           size_t nnz, void* out) {
  return Gather4<true>(in, idx, wire, nnz, out);
}

}  // namespace sieve::kernels::simd

#else  // not x86-64: never called (ActiveCpuIsa() is kPortable)

namespace sieve::kernels::simd {
size_t MaskedUnpackWordsAvx512(size_t, const void*, const uint64_t*, size_t, void*) { return 0; }
size_t MaskedCompressWordsAvx512(size_t, const void*, const uint64_t*, size_t, void*) { return 0; }
size_t MaskedGather4Avx512(const void*, const uint32_t*, size_t, void*) { return 0; }
size_t MaskedGatherSum4Avx512(const void*, const uint32_t*, const void*, size_t, void*) {
  return 0;
}
}  // namespace sieve::kernels::simd

#endif
