// Error-feedback passes: one fused add-and-round before the all-reduce, one
// re-quantization (same Philox words, so the same q) after the scales are known.
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

template <typename L>
void Update(const void* sent, size_t count, size_t block, const float* scales,
            const PhiloxStream& rng, float* residual) {
  int32_t q[256];
  for (size_t j0 = 0; j0 < count; j0 += 256) {
    int cnt = static_cast<int>(count - j0 < 256 ? count - j0 : 256);
    TernaryQuantizeRun<L>(sent, nullptr, j0, cnt, block, scales, rng, q);
    for (int i = 0; i < cnt; ++i)
      residual[j0 + i] =
          TernaryFeedbackResidual(residual[j0 + i], scales[(j0 + i) / block], q[i]);
  }
}

}  // namespace

void TernaryFeedbackApply(DType dtype, const void* g, float* residual, void* out, size_t count) {
  if (dtype == DType::kFloat16) return Apply<TernaryF16>(g, residual, out, count);
  if (dtype == DType::kBfloat16) return Apply<TernaryBf16>(g, residual, out, count);
  Apply<TernaryF32>(g, residual, out, count);
}

void TernaryFeedbackUpdate(DType dtype, const void* sent, size_t count, size_t block,
                           const float* scales, const PhiloxStream& rng, float* residual) {
  if (dtype == DType::kFloat16)
    return Update<TernaryF16>(sent, count, block, scales, rng, residual);
  if (dtype == DType::kBfloat16)
    return Update<TernaryBf16>(sent, count, block, scales, rng, residual);
  Update<TernaryF32>(sent, count, block, scales, rng, residual);
}

}  // namespace sieve::kernels
