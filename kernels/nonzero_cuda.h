// Zero-pattern kernels on device memory, enqueued on a CUDA stream: the same
// results as nonzero.h, bit for bit. Built only with SIEVE_WITH_CUDA.
#ifndef SIEVE_KERNELS_NONZERO_CUDA_H_
#define SIEVE_KERNELS_NONZERO_CUDA_H_

#include <cstddef>
#include <cstdint>

namespace sieve::kernels {

// Each returns a cudaError_t value (0 = success); all pointers are device
// memory; elem_size is 1, 2, 4 or 8 (else cudaErrorInvalidValue).
// NonzeroBitmap: ceil(count/64) words of `bits` written, bits past count clear.
int NonzeroBitmapCuda(size_t elem_size, const void* data, size_t count, uint64_t* bits,
                      void* stream);
// *any = 1 if AnyNonzeroOutside(elem_size, data, mask, count), else 0; the
// word is written when the stream reaches the call.
int AnyNonzeroOutsideCuda(size_t elem_size, const void* data, const uint64_t* mask, size_t count,
                          uint32_t* any, void* stream);

}  // namespace sieve::kernels

#endif  // SIEVE_KERNELS_NONZERO_CUDA_H_
