// Ternary kernels on device memory, enqueued on a CUDA stream: the same
// results as ternary.h's CPU kernels, bit for bit (they share the per-element
// inlines). Built only with SIEVE_WITH_CUDA.
#ifndef SIEVE_KERNELS_TERNARY_CUDA_H_
#define SIEVE_KERNELS_TERNARY_CUDA_H_

#include <cstddef>

#include "kernels/ternary.h"

namespace sieve::kernels {

// Each returns a cudaError_t value (0 = success); pointers are device memory,
// `rng` is passed by value. Semantics as the CPU function of the same name
// (idx: the gather of a mask, or null), through the same per-element inlines.
int TernaryAbsMaxCuda(DType dtype, const void* in, const uint32_t* idx, size_t count,
                      size_t block, float* scales, void* stream);
int TernaryQuantizePackCuda(DType dtype, const void* in, const uint32_t* idx, size_t offset,
                            size_t elems, size_t block, const float* scales, PhiloxStream rng,
                            int w, void* wire, void* stream);
int TernaryQuantizeAddCuda(DType dtype, const void* in, const uint32_t* idx, size_t offset,
                           size_t elems, size_t block, const float* scales, PhiloxStream rng,
                           const void* wire, int w, TernaryWork wt, void* work, void* stream);
int TernaryPackCuda(TernaryWork wt, const void* work, size_t elems, int w, void* wire,
                    void* stream);
int TernaryUnpackCuda(TernaryWork wt, const void* wire, size_t elems, int w, bool accumulate,
                      void* work, void* stream);
int TernaryDequantizeRangeCuda(DType dtype, TernaryWork wt, const void* sums, size_t offset,
                               size_t elems, size_t block, const float* scales, int divisor,
                               void* out, void* stream);
int TernaryDequantizeCuda(DType dtype, TernaryWork wt, const void* sums, size_t count,
                          size_t block, const float* scales, int divisor, void* out,
                          void* stream);
// TernaryDequantizeScatter's result for the `elems` kept elements offset.. of a
// mask: idx is the mask's whole kept-index list (kept element offset+k lies at
// dense position idx[offset+k]), and [begin, end) the dense range they own.
int TernaryDequantizeScatterCuda(DType dtype, TernaryWork wt, const void* sums, size_t offset,
                                 size_t elems, size_t block, const float* scales, int divisor,
                                 const uint32_t* idx, const uint64_t* bits, size_t begin,
                                 size_t end, void* out, void* stream);

// Error feedback (kernels/ternary_feedback.h): TernaryFeedbackApply; and
// TernaryQuantizePack of `sent` in 2 bits (offset 0) fused with
// TernaryFeedbackUpdate (the residual from the same q, one pass).
int TernaryFeedbackApplyCuda(DType dtype, const void* g, float* residual, void* out, size_t count,
                             void* stream);
int TernaryQuantizeFeedbackCuda(DType dtype, const void* sent, size_t count, size_t block,
                                const float* scales, PhiloxStream rng, void* wire,
                                float* residual, void* stream);

// Dense forms (idx = nullptr), as the CPU kernels have.
inline int TernaryAbsMaxCuda(DType dtype, const void* in, size_t count, size_t block,
                             float* scales, void* stream) {
  return TernaryAbsMaxCuda(dtype, in, nullptr, count, block, scales, stream);
}
inline int TernaryQuantizePackCuda(DType dtype, const void* in, size_t offset, size_t elems,
                                   size_t block, const float* scales, PhiloxStream rng, int w,
                                   void* wire, void* stream) {
  return TernaryQuantizePackCuda(dtype, in, nullptr, offset, elems, block, scales, rng, w, wire,
                                 stream);
}
inline int TernaryQuantizeAddCuda(DType dtype, const void* in, size_t offset, size_t elems,
                                  size_t block, const float* scales, PhiloxStream rng,
                                  const void* wire, int w, TernaryWork wt, void* work,
                                  void* stream) {
  return TernaryQuantizeAddCuda(dtype, in, nullptr, offset, elems, block, scales, rng, wire, w,
                                wt, work, stream);
}

}  // namespace sieve::kernels

#endif  // SIEVE_KERNELS_TERNARY_CUDA_H_
