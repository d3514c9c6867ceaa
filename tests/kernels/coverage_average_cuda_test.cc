// CUDA SumDivide against the CPU kernel, bit for bit, every supported type,
// several divisors, odd sizes, in place. Skipped (with the reason) without a GPU.
#include "kernels/coverage_average_cuda.h"

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "kernels/coverage_average.h"
#include "support/float_compare.h"
#include "support/gpu.h"

namespace sieve::kernels {
namespace {

using sieve_test::CountDifferent;
using sieve_test::FromDevice;
using sieve_test::HaveGpu;
using sieve_test::ToDevice;

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
