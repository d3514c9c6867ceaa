// SumDivide: plain loops GCC vectorizes, built for baseline x86-64 and AVX2 and
// picked at run time; float16/bfloat16 are widened to float32 in stack chunks.
#include "kernels/coverage_average.h"

#include "kernels/combine_loops.h"
#include "kernels/cpu_isa.h"
#include "kernels/half_codec.h"

namespace sieve::kernels {
namespace {

// (a + b) / d in T: one addition, one IEEE division, as the reference.
template <typename T>
struct SumDivideBy {
  T d;
  SIEVE_KERNEL_INLINE T operator()(T a, T b) const { return (a + b) / d; }
};

template <typename T>
SIEVE_KERNEL_INLINE void SumDividePlain(const void* a, const void* b, void* out, size_t n,
                                        int divisor) {
  combine::Native<T>(a, b, out, n, SumDivideBy<T>{static_cast<T>(divisor)});
}

// float16/bfloat16: added and divided in float32, rounded once.
template <typename Codec>
SIEVE_KERNEL_INLINE void SumDividePacked(const void* a, const void* b, void* out, size_t n,
                                         int divisor) {
  combine::Widened<Codec>(a, b, out, n, SumDivideBy<float>{static_cast<float>(divisor)});
}

SIEVE_KERNEL_INLINE void SumDivideImpl(DType dtype, const void* a, const void* b, void* out,
                                       size_t n, int divisor) {
  switch (dtype) {
    case DType::kFloat32:
      return SumDividePlain<float>(a, b, out, n, divisor);
    case DType::kFloat64:
      return SumDividePlain<double>(a, b, out, n, divisor);
    case DType::kFloat16:
      return SumDividePacked<HalfCodec>(a, b, out, n, divisor);
    case DType::kBfloat16:
      return SumDividePacked<Bf16Codec>(a, b, out, n, divisor);
    default:
      return;  // excluded by the caller (SupportsCoverageAverage)
  }
}

void SumDivideBaseline(DType dtype, const void* a, const void* b, void* out, size_t n,
                       int divisor) {
  SumDivideImpl(dtype, a, b, out, n, divisor);
}
#if defined(__x86_64__)
__attribute__((target("avx2"))) void SumDivideAvx2(DType dtype, const void* a, const void* b,
                                                   void* out, size_t n, int divisor) {
  SumDivideImpl(dtype, a, b, out, n, divisor);
}

bool HasAvx2() { return ActiveCpuIsa() >= CpuIsa::kAvx2; }
#endif

}  // namespace

bool SupportsCoverageAverage(DType dtype) {
  return dtype == DType::kFloat32 || dtype == DType::kFloat64 || dtype == DType::kFloat16 ||
         dtype == DType::kBfloat16;
}

void SumDivide(DType dtype, const void* a, const void* b, void* out, size_t n, int divisor) {
#if defined(__x86_64__)
  if (HasAvx2()) return SumDivideAvx2(dtype, a, b, out, n, divisor);
#endif
  SumDivideBaseline(dtype, a, b, out, n, divisor);
}

}  // namespace sieve::kernels
