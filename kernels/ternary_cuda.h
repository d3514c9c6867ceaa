// Ternary kernels on device memory, enqueued on a CUDA stream: the same
// results as ternary.h's CPU kernels, bit for bit (they share the per-element
// inlines). Built only with SIEVE_WITH_CUDA.
#ifndef SIEVE_KERNELS_TERNARY_CUDA_H_
#define SIEVE_KERNELS_TERNARY_CUDA_H_

#include <cstddef>

#include "kernels/ternary.h"

namespace sieve::kernels {

// Each returns a cudaError_t value (0 = success); pointers are device memory,
// `rng` is passed by value. Semantics as the CPU function of the same name.
int TernaryAbsMaxCuda(DType dtype, const void* in, size_t count, size_t block, float* scales,
                      void* stream);
int TernaryQuantizePackCuda(DType dtype, const void* in, size_t offset, size_t elems,
                            size_t block, const float* scales, PhiloxStream rng, int w,
                            void* wire, void* stream);
int TernaryQuantizeAddCuda(DType dtype, const void* in, size_t offset, size_t elems,
                           size_t block, const float* scales, PhiloxStream rng, const void* wire,
                           int w, TernaryWork wt, void* work, void* stream);
int TernaryPackCuda(TernaryWork wt, const void* work, size_t elems, int w, void* wire,
                    void* stream);
int TernaryUnpackCuda(TernaryWork wt, const void* wire, size_t elems, int w, bool accumulate,
                      void* work, void* stream);
int TernaryDequantizeCuda(DType dtype, TernaryWork wt, const void* sums, size_t count,
                          size_t block, const float* scales, int divisor, void* out,
                          void* stream);

}  // namespace sieve::kernels

#endif  // SIEVE_KERNELS_TERNARY_CUDA_H_
