// SumDivide: plain loops GCC vectorizes, built for baseline x86-64 and AVX2 and
// picked at run time; float16/bfloat16 are widened to float32 in stack chunks.
#include "kernels/coverage_average.h"

#include <algorithm>
#include <cstdint>

#include "kernels/half_codec.h"

namespace sieve::kernels {
namespace {

#define SIEVE_KERNEL_INLINE inline __attribute__((always_inline))

// No __restrict: out may be a or b (exact alias).
template <typename T>
SIEVE_KERNEL_INLINE void SumDividePlain(const void* a, const void* b, void* out, size_t n,
                                        int divisor) {
  const T* ta = static_cast<const T*>(a);
  const T* tb = static_cast<const T*>(b);
  T* to = static_cast<T*>(out);
  const T d = static_cast<T>(divisor);
  for (size_t i = 0; i < n; ++i) to[i] = (ta[i] + tb[i]) / d;
}

// Each chunk is read whole before any of it is written, so aliasing is harmless.
template <typename Codec>
SIEVE_KERNEL_INLINE void SumDividePacked(const void* a, const void* b, void* out, size_t n,
                                         int divisor) {
  constexpr size_t kChunk = 512;
  float fa[kChunk];
  float fb[kChunk];
  const uint16_t* ta = static_cast<const uint16_t*>(a);
  const uint16_t* tb = static_cast<const uint16_t*>(b);
  uint16_t* to = static_cast<uint16_t*>(out);
  const float d = static_cast<float>(divisor);
  for (size_t base = 0; base < n; base += kChunk) {
    const size_t m = std::min(kChunk, n - base);
    for (size_t i = 0; i < m; ++i) fa[i] = Codec::Load(ta[base + i]);
    for (size_t i = 0; i < m; ++i) fb[i] = Codec::Load(tb[base + i]);
    for (size_t i = 0; i < m; ++i) fa[i] = (fa[i] + fb[i]) / d;
    for (size_t i = 0; i < m; ++i) to[base + i] = Codec::Store(fa[i]);
  }
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

bool HasAvx2() {
  static const bool has = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") != 0;
  }();
  return has;
}
#endif

#undef SIEVE_KERNEL_INLINE

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
