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
// The residual after this rank's code q was sent against scale s. s * q is
// exact (q in {-1, 0, 1}), so a fused multiply-add gives the same bits; a NaN
// scale gives a NaN residual, whatever q.
SIEVE_HD inline float TernaryFeedbackResidual(float sum, float s, int32_t q) {
  return sum - s * static_cast<float>(q);
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
void TernaryFeedbackUpdate(DType dtype, const void* sent, size_t count, size_t block,
                           const float* scales, const PhiloxStream& rng, float* residual);

}  // namespace sieve::kernels

#endif  // SIEVE_KERNELS_TERNARY_FEEDBACK_H_
