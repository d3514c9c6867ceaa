// Comparing floating-point kernel outputs element by element: equal bytes, or
// both NaN. Which NaN an operation returns (payload, sign) when both operands
// are NaN depends on operand order, and a GPU returns its canonical NaN where
// the CPU propagates a payload; no kernel promises either.
#ifndef SIEVE_TESTS_SUPPORT_FLOAT_COMPARE_H_
#define SIEVE_TESTS_SUPPORT_FLOAT_COMPARE_H_

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "kernels/dtype.h"

namespace sieve_test {

inline bool SameValue(sieve::kernels::DType dtype, const char* p, const char* q) {
  using sieve::kernels::DType;
  const size_t es = sieve::kernels::DTypeSize(dtype);
  if (std::memcmp(p, q, es) == 0) return true;
  auto is_nan = [dtype](const char* x) {
    if (dtype == DType::kFloat64) {
      double d;
      std::memcpy(&d, x, 8);
      return std::isnan(d);
    }
    if (dtype == DType::kFloat32) {
      float f;
      std::memcpy(&f, x, 4);
      return std::isnan(f);
    }
    uint16_t h;
    std::memcpy(&h, x, 2);
    return std::isnan(dtype == DType::kFloat16 ? sieve::kernels::HalfToFloat(h)
                                               : sieve::kernels::Bf16ToFloat(h));
  };
  return is_nan(p) && is_nan(q);
}

// How many of the first n elements of `want` and `got` are not the same value.
inline size_t CountDifferent(sieve::kernels::DType dtype, const std::vector<char>& want,
                             const char* got, size_t n) {
  size_t wrong = 0;
  const size_t es = sieve::kernels::DTypeSize(dtype);
  for (size_t i = 0; i < n; ++i) wrong += !SameValue(dtype, &want[i * es], got + i * es);
  return wrong;
}

}  // namespace sieve_test

#endif  // SIEVE_TESTS_SUPPORT_FLOAT_COMPARE_H_
