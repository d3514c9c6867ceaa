// CUDA SumDivide against the CPU kernel, bit for bit, every supported type,
// several divisors, odd sizes, in place. Skipped (with the reason) without a GPU.
#include "kernels/coverage_average_cuda.h"

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "kernels/coverage_average.h"
#include "support/gpu.h"

namespace sieve::kernels {
namespace {

using sieve_test::HaveGpu;

// Equal bytes, or both NaN: which NaN an operation returns (payload, sign) when
// both operands are NaN depends on operand order, which no kernel promises.
bool SameValue(DType dtype, const char* p, const char* q) {
  const size_t es = DTypeSize(dtype);
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
    return std::isnan(dtype == DType::kFloat16 ? HalfToFloat(h) : Bf16ToFloat(h));
  };
  return is_nan(p) && is_nan(q);
}

size_t CountDifferent(DType dtype, const std::vector<char>& a, const char* b, size_t n) {
  size_t wrong = 0;
  const size_t es = DTypeSize(dtype);
  for (size_t i = 0; i < n; ++i) wrong += !SameValue(dtype, &a[i * es], b + i * es);
  return wrong;
}

void* ToDevice(const std::vector<char>& host) {
  void* d = nullptr;
  if (cudaMalloc(&d, host.size() + 8) != cudaSuccess) return nullptr;
  cudaMemcpy(d, host.data(), host.size(), cudaMemcpyHostToDevice);
  return d;
}

std::vector<char> FromDevice(const void* d, size_t bytes) {
  std::vector<char> out(bytes);
  cudaMemcpy(out.data(), d, bytes, cudaMemcpyDeviceToHost);
  return out;
}

class SumDivideCudaTest : public ::testing::TestWithParam<DType> {};

TEST_P(SumDivideCudaTest, MatchesCpuKernelBitForBit) {
  std::string why;
  if (!HaveGpu(&why)) GTEST_SKIP() << "no usable GPU: " << why;
  const DType dtype = GetParam();
  const size_t n = 100003, es = DTypeSize(dtype);
  std::mt19937_64 rng(static_cast<int>(dtype));
  std::vector<char> a(n * es), b(n * es);
  for (char& c : a) c = static_cast<char>(rng());  // any bits: NaN, inf, subnormals too
  for (char& c : b) c = static_cast<char>(rng());
  for (int divisor : {1, 2, 3, 7}) {
    void *da = ToDevice(a), *db = ToDevice(b), *dout = ToDevice(a);
    ASSERT_TRUE(da && db && dout);
    std::vector<char> want(n * es);
    SumDivide(dtype, a.data(), b.data(), want.data(), n, divisor);
    ASSERT_EQ(0, SumDivideCuda(dtype, da, db, dout, n, divisor, nullptr));
    ASSERT_EQ(0, SumDivideCuda(dtype, da, db, da, n, divisor, nullptr));  // in place
    ASSERT_EQ(cudaSuccess, cudaDeviceSynchronize());
    std::vector<char> got = FromDevice(dout, n * es), got_in = FromDevice(da, n * es);
    // The GPU returns its canonical NaN where the CPU propagates a payload: NaN-ness counts.
    EXPECT_EQ(CountDifferent(dtype, want, got.data(), n), 0u)
        << DTypeName(dtype) << " divisor " << divisor;
    EXPECT_EQ(CountDifferent(dtype, want, got_in.data(), n), 0u) << DTypeName(dtype) << " in place";
    cudaFree(da);
    cudaFree(db);
    cudaFree(dout);
  }
  EXPECT_NE(0, SumDivideCuda(DType::kInt32, nullptr, nullptr, nullptr, 1, 1, nullptr));
}

INSTANTIATE_TEST_SUITE_P(Types, SumDivideCudaTest,
                         ::testing::Values(DType::kFloat32, DType::kFloat64, DType::kFloat16,
                                           DType::kBfloat16));

}  // namespace
}  // namespace sieve::kernels
