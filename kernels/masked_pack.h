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

// out[k] = in[idx[k]] op wire[k], k < nnz, with Reduce()'s arithmetic (kAvg adds).
// out may alias wire.
void MaskedGatherReduce(DType dtype, RedOp op, const void* in, const uint32_t* idx,
                        const void* wire, void* out, size_t nnz);

// out[j] = packed[rank of j among kept elements] where bit j is set, else 0, j < count.
// packed must not overlap out.
void MaskedUnpack(size_t elem_size, const void* packed, const uint64_t* bits, size_t count,
                  void* out);

// Scalar oracles for the tests.
void MaskedPackReference(size_t elem_size, const void* in, const uint32_t* idx, size_t nnz,
                         void* out);
void MaskedGatherReduceReference(DType dtype, RedOp op, const void* in, const uint32_t* idx,
                                 const void* wire, void* out, size_t nnz);
void MaskedUnpackReference(size_t elem_size, const void* packed, const uint64_t* bits,
                           size_t count, void* out);

}  // namespace sieve::kernels

#endif  // SIEVE_KERNELS_MASKED_PACK_H_
