// Error feedback for the ternary all-reduce: the residual e of what this rank's
// quantization dropped is added to the next step's gradient,
//   g' = g + e_prev (sent, rounded to the datatype),  e = g + e_prev - s * q(g'),
// so the updates applied over many steps track the true gradients.
#ifndef SIEVE_KERNELS_TERNARY_FEEDBACK_H_
#define SIEVE_KERNELS_TERNARY_FEEDBACK_H_

#include <cstddef>

#include "kernels/dtype.h"
#include "kernels/philox.h"

namespace sieve::kernels {

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
