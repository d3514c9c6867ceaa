// Error feedback's add-and-round pass in the split form the device path uses
// (TernaryFeedbackUpdate, a quantizing pass, lives with the ternary kernels).
#include "kernels/ternary_feedback.h"

#include "kernels/ternary.h"

namespace sieve::kernels {

namespace {

template <typename L>
void Apply(const void* g, float* residual, void* out, size_t count) {
  for (size_t j = 0; j < count; ++j) {
    float sum = TernaryFeedbackSum<L>(g, j, residual[j]);
    residual[j] = sum;
    L::Store(out, j, sum);
  }
}

}  // namespace

void TernaryFeedbackApply(DType dtype, const void* g, float* residual, void* out, size_t count) {
  if (dtype == DType::kFloat16) return Apply<TernaryF16>(g, residual, out, count);
  if (dtype == DType::kBfloat16) return Apply<TernaryBf16>(g, residual, out, count);
  Apply<TernaryF32>(g, residual, out, count);
}

}  // namespace sieve::kernels
