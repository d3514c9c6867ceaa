// Elementwise reductions on device memory, enqueued on a CUDA stream: the same
// arithmetic as reduce.h (float16/bfloat16 in float32, one rounding, integer
// wrap-around), bit-identical to the CPU kernels. Built only with SIEVE_WITH_CUDA.
#ifndef SIEVE_KERNELS_REDUCE_CUDA_H_
#define SIEVE_KERNELS_REDUCE_CUDA_H_

#include <cstddef>

#include "kernels/dtype.h"

namespace sieve::kernels {

// out[i] = a[i] op b[i] on the device; returns a cudaError_t value (0 = success).
int ReduceCuda(DType dtype, RedOp op, const void* a, const void* b, void* out, size_t n,
               void* stream);
// buf[i] /= divisor on the device (same rules as DivideBy).
int DivideByCuda(DType dtype, void* buf, size_t n, int divisor, void* stream);

}  // namespace sieve::kernels

#endif  // SIEVE_KERNELS_REDUCE_CUDA_H_
