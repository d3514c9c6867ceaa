// Masked pack/unpack on device memory, enqueued on a CUDA stream: the same
// results as masked_pack.h, bit for bit. Built only with SIEVE_WITH_CUDA.
#ifndef SIEVE_KERNELS_MASKED_PACK_CUDA_H_
#define SIEVE_KERNELS_MASKED_PACK_CUDA_H_

#include <cstddef>
#include <cstdint>

#include "kernels/dtype.h"

namespace sieve::kernels {

// Each returns a cudaError_t value (0 = success); all pointers are device memory.
// out[k] = in[idx[k]], k < nnz.
int MaskedPackCuda(size_t elem_size, const void* in, const uint32_t* idx, size_t nnz, void* out,
                   void* stream);
// out[k] = in[idx[k]] op wire[k] (gather, then ReduceCuda's arithmetic); out must not alias wire.
int MaskedGatherReduceCuda(DType dtype, RedOp op, const void* in, const uint32_t* idx,
                           const void* wire, void* out, size_t nnz, void* stream);
// out[idx[k]] = packed[k]; out[j] = 0 where bit j of `bits` is clear, j < count.
int MaskedUnpackCuda(size_t elem_size, const void* packed, const uint32_t* idx, size_t nnz,
                     const uint64_t* bits, size_t count, void* out, void* stream);
// MaskedUnpackRange on the device: the `nnz` kept elements whose dense positions
// are idx[0 .. nnz) (all inside [begin, end)) from packed; zeros elsewhere in
// [begin, end). Only [begin, end) of out is written.
int MaskedUnpackRangeCuda(size_t elem_size, const void* packed, const uint32_t* idx, size_t nnz,
                          const uint64_t* bits, size_t begin, size_t end, void* out,
                          void* stream);

}  // namespace sieve::kernels

#endif  // SIEVE_KERNELS_MASKED_PACK_CUDA_H_
