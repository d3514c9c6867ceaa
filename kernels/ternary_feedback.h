// Error feedback for the ternary all-reduce: the residual e of what this rank's
// quantization dropped is added to the next step's gradient,
//   g' = g + e_prev (sent, rounded to the datatype),  e = g + e_prev - s * q(g'),
// so the updates applied over many steps track the true gradients.
#ifndef SIEVE_KERNELS_TERNARY_FEEDBACK_H_
#define SIEVE_KERNELS_TERNARY_FEEDBACK_H_

#include <cstddef>
#include <cstdint>

#include "kernels/dtype.h"
#include "kernels/philox.h"

namespace sieve::kernels {

// The per-element formulas, shared by the CPU loops and the CUDA kernels
// (kernels/cuda/ternary_device.cuh) so residuals match bit for bit.
// What is sent: g[j] + e_prev in float32 (kept as the residual until the
// update; rounded to the datatype when sent).
template <typename L>
SIEVE_HD inline float TernaryFeedbackSum(const void* g, size_t j, float e_prev) {
  return L::Load(g, j) + e_prev;
}
// The residual after this rank's code q at L levels was sent against scale s:
// sum - (s * q) / L. For ternary (L = 1, q in {-1, 0, 1}) s * q is exact and the
// division by 1 too, so a fused multiply-add gives the same bits; for L > 1 the
// division keeps the product out of any contraction (CPU and CUDA round it alike).
// A NaN scale gives a NaN residual, whatever q.
SIEVE_HD inline float TernaryFeedbackResidual(float sum, float s, int32_t q, int levels = 1) {
  return sum - s * static_cast<float>(q) / static_cast<float>(levels);
}

// The host all-reduce fuses both steps into its quantizing passes
// (kernels/ternary.h, TernarySource::residual). The device path runs them as
// two passes around its own quantization; these are their CPU forms:
// out[j] = g[j] + residual[j] rounded to dtype; residual[j] = that sum in float32
// (kept for TernaryFeedbackUpdate). float32/float16/bfloat16.
void TernaryFeedbackApply(DType dtype, const void* g, float* residual, void* out, size_t count);

// residual[j] = residual[j] - s_b * q[j], where q is this rank's quantization of
// sent[j] (the TernaryFeedbackApply output) with the agreed scales and `rng`,
// exactly as the all-reduce quantized it.
// levels: L of the call (1: ternary).
void TernaryFeedbackUpdate(DType dtype, const void* sent, size_t count, size_t block,
                           const float* scales, const PhiloxStream& rng, float* residual,
                           int levels = 1);

}  // namespace sieve::kernels

#endif  // SIEVE_KERNELS_TERNARY_FEEDBACK_H_
