// Scalar oracle for SumDivide: one element at a time through dtype.h's plain
// conversions. Slow on purpose; the tests trust it.
#include <cstdint>
#include <cstring>

#include "kernels/coverage_average.h"

namespace sieve::kernels {

void SumDivideReference(DType dtype, const void* a, const void* b, void* out, size_t n,
                        int divisor) {
  const size_t es = DTypeSize(dtype);
  const auto* pa = static_cast<const unsigned char*>(a);
  const auto* pb = static_cast<const unsigned char*>(b);
  auto* po = static_cast<unsigned char*>(out);
  for (size_t i = 0; i < n; ++i) {
    if (dtype == DType::kFloat64) {
      double x, y;
      std::memcpy(&x, pa + i * es, 8);
      std::memcpy(&y, pb + i * es, 8);
      double r = (x + y) / static_cast<double>(divisor);
      std::memcpy(po + i * es, &r, 8);
    } else if (dtype == DType::kFloat32) {
      float x, y;
      std::memcpy(&x, pa + i * es, 4);
      std::memcpy(&y, pb + i * es, 4);
      float r = (x + y) / static_cast<float>(divisor);
      std::memcpy(po + i * es, &r, 4);
    } else if (dtype == DType::kFloat16 || dtype == DType::kBfloat16) {
      uint16_t x, y;
      std::memcpy(&x, pa + i * es, 2);
      std::memcpy(&y, pb + i * es, 2);
      const bool half = dtype == DType::kFloat16;
      float fx = half ? HalfToFloat(x) : Bf16ToFloat(x);
      float fy = half ? HalfToFloat(y) : Bf16ToFloat(y);
      float r = (fx + fy) / static_cast<float>(divisor);
      uint16_t o = half ? FloatToHalf(r) : FloatToBf16(r);
      std::memcpy(po + i * es, &o, 2);
    }
  }
}

}  // namespace sieve::kernels
