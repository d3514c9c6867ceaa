// Masked sparse packing kernels (PacTrain): gather the kept elements of a buffer
// into a packed vector, gather-and-combine with a received packed image, and
// scatter a packed vector back with zero-fill of the masked-out positions.
#ifndef SIEVE_KERNELS_MASKED_PACK_H_
#define SIEVE_KERNELS_MASKED_PACK_H_

#include <cstddef>
#include <cstdint>

#include "kernels/dtype.h"

namespace sieve::kernels {

// A mask as the kernels see it: `idx` holds the nnz kept element indices in
// increasing order; `bits` holds ceil(count/64) words, bit j%64 of word j/64 set
// when element j is kept (bits at or past `count` clear).

// out[k] = in[idx[k]], k < nnz. elem_size is 1, 2, 4 or 8.
void MaskedPack(size_t elem_size, const void* in, const uint32_t* idx, size_t nnz, void* out);

// The same through the bitmap: out = the elements of in[0, count) whose bit is
// set, in order; returns how many (the mask's nnz). Reads every dense position
// (AVX-512: sixteen or more at a time, compressed), so it beats MaskedPack's
// gather unless the mask is very sparse.
size_t MaskedCompress(size_t elem_size, const void* in, const uint64_t* bits, size_t count,
                      void* out);

// out[k] = in[idx[k]] op wire[k], k < nnz, with Reduce()'s arithmetic (kAvg adds).
// out may alias wire.
void MaskedGatherReduce(DType dtype, RedOp op, const void* in, const uint32_t* idx,
                        const void* wire, void* out, size_t nnz);

// out[j] = packed[rank of j among kept elements] where bit j is set, else 0, j < count.
// packed must not overlap out.
void MaskedUnpack(size_t elem_size, const void* packed, const uint64_t* bits, size_t count,
                  void* out);

// The same for dense positions [begin, end) only: packed[0] is the first kept
// element at or after begin; out is the whole buffer (only [begin, end) is
// written). Ranges that tile [0, count) may be unpacked in any order.
void MaskedUnpackRange(size_t elem_size, const void* packed, const uint64_t* bits, size_t begin,
                       size_t end, void* out);

// Dense range of the packed range [a, b) of nnz > 0 kept elements `idx` out of
// `count`: it ends after kept element b-1 (or at count when b == nnz) and starts
// where the previous packed range ends, so non-empty packed ranges that tile
// [0, nnz) tile [0, count) and each masked-out position belongs to exactly one
// of them. An empty packed range (a == b) owns nothing.
inline void MaskedDenseRange(const uint32_t* idx, size_t nnz, size_t count, size_t a, size_t b,
                             size_t* begin, size_t* end) {
  if (a == b) {
    *begin = *end = 0;
    return;
  }
  *begin = a == 0 ? 0 : static_cast<size_t>(idx[a - 1]) + 1;
  *end = b == nnz ? count : static_cast<size_t>(idx[b - 1]) + 1;
}

// Scalar oracles for the tests.
void MaskedPackReference(size_t elem_size, const void* in, const uint32_t* idx, size_t nnz,
                         void* out);
void MaskedGatherReduceReference(DType dtype, RedOp op, const void* in, const uint32_t* idx,
                                 const void* wire, void* out, size_t nnz);
void MaskedUnpackReference(size_t elem_size, const void* packed, const uint64_t* bits,
                           size_t count, void* out);
void MaskedUnpackRangeReference(size_t elem_size, const void* packed, const uint64_t* bits,
                                size_t begin, size_t end, void* out);

}  // namespace sieve::kernels

#endif  // SIEVE_KERNELS_MASKED_PACK_H_
