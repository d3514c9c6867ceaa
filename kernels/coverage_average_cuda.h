// The coverage division on device memory, enqueued on a CUDA stream: the same
// arithmetic as coverage_average.h, bit-identical. Built only with SIEVE_WITH_CUDA.
#ifndef SIEVE_KERNELS_COVERAGE_AVERAGE_CUDA_H_
#define SIEVE_KERNELS_COVERAGE_AVERAGE_CUDA_H_

#include <cstddef>

#include "kernels/dtype.h"

namespace sieve::kernels {

// out[i] = (a[i] + b[i]) / divisor on the device (float32, float16, bfloat16,
// float64); returns a cudaError_t value (0 = success, cudaErrorInvalidValue for
// another type). out may alias a or b.
int SumDivideCuda(DType dtype, const void* a, const void* b, void* out, size_t n, int divisor,
                  void* stream);

}  // namespace sieve::kernels

#endif  // SIEVE_KERNELS_COVERAGE_AVERAGE_CUDA_H_
