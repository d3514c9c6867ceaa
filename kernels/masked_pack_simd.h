// Wide (AVX-512; AVX2 for 4-byte compress and gather) unpack and compress of whole bitmap words and
// the 4-byte gather by index, internal to kernels/: the same bytes as the portable word loops in
// masked_pack.cc. Callers check ActiveCpuIsa() first (each function says for which level).
#ifndef SIEVE_KERNELS_MASKED_PACK_SIMD_H_
#define SIEVE_KERNELS_MASKED_PACK_SIMD_H_

#include <cstddef>
#include <cstdint>

namespace sieve::kernels::simd {

// For each of `words` bitmap words, out[64w + i] = the next packed element where
// bit i is set, else 0. Returns the packed elements consumed.
size_t MaskedUnpackWordsAvx512(size_t elem_size, const void* packed, const uint64_t* bits,
                               size_t words, void* out);

// The kept elements of `words` whole bitmap words of in, in order, into out
// (only the kept lanes are read; only the returned count is written).
size_t MaskedCompressWordsAvx512(size_t elem_size, const void* in, const uint64_t* bits,
                                 size_t words, void* out);

// out[k] = in[idx[k]] for 4-byte elements, k below the returned count (whole
// groups of sixteen). Reads only the positions of idx (and, for a group within
// 32 positions, those between its smallest and largest).
size_t MaskedGather4Avx512(const void* in, const uint32_t* idx, size_t nnz, void* out);

// out[k] = in[idx[k]] + wire[k] in float32 the same way (MaskedGatherReduce's sum in
// one pass); out may alias wire.
size_t MaskedGatherSum4Avx512(const void* in, const uint32_t* idx, const void* wire, size_t nnz,
                              void* out);

// The same for 4-byte elements with AVX2 (callers check CpuIsa::kAvx2). Reads
// the words' whole dense range.
size_t MaskedCompressWords4Avx2(const void* in, const uint64_t* bits, size_t words, void* out);

// MaskedGather4Avx512 and MaskedGatherSum4Avx512 with AVX2, in whole groups of eight
// (a group within 16 positions reads those between its smallest and largest index).
size_t MaskedGather4Avx2(const void* in, const uint32_t* idx, size_t nnz, void* out);
size_t MaskedGatherSum4Avx2(const void* in, const uint32_t* idx, const void* wire, size_t nnz,
                            void* out);

}  // namespace sieve::kernels::simd

#endif  // SIEVE_KERNELS_MASKED_PACK_SIMD_H_
