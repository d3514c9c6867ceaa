// The reductions libsieve ships (sieve_reduce_*, sieve_divide_* in the
// embedded module, launched by CudaDeviceOps as the direct path does) against
// the CPU reference, bit for bit, for every datatype, op and odd size.
// Skipped (with the reason) without a GPU.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include "support/shipped_kernels.h"

#include <cstring>
#include <random>
#include <vector>

#include "kernels/reduce.h"

namespace sieve::kernels {
namespace {

using sieve_test::ShippedKernels;

std::vector<char> RandomBytes(DType dtype, size_t n, uint64_t seed) {
  std::vector<char> out(n * DTypeSize(dtype));
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> real(-8.0f, 8.0f);
  for (size_t i = 0; i < n; ++i) {
    char* p = out.data() + i * DTypeSize(dtype);
    uint64_t bits = rng();
    float f = real(rng);
    double d = f;
    uint16_t h = FloatToHalf(f), b = FloatToBf16(f);
    switch (dtype) {
      case DType::kFloat16: std::memcpy(p, &h, 2); break;
      case DType::kBfloat16: std::memcpy(p, &b, 2); break;
      case DType::kFloat32: std::memcpy(p, &f, 4); break;
      case DType::kFloat64: std::memcpy(p, &d, 8); break;
      default: std::memcpy(p, &bits, DTypeSize(dtype));
    }
  }
  return out;
}

class ReduceCudaTest : public ::testing::TestWithParam<std::tuple<int, int>> {};

TEST_P(ReduceCudaTest, MatchesCpuReferenceBitForBit) {
  std::string why;
  sieve::gpu::CudaDeviceOps* k = ShippedKernels(&why);
  if (k == nullptr) GTEST_SKIP() << "needs a GPU: " << why;
  DType dtype = static_cast<DType>(std::get<0>(GetParam()));
  RedOp op = static_cast<RedOp>(std::get<1>(GetParam()));
  for (size_t n : {size_t{1}, size_t{7}, size_t{1023}, size_t{(1 << 20) + 3}}) {
    size_t bytes = n * DTypeSize(dtype);
    std::vector<char> a = RandomBytes(dtype, n, 1 + n), b = RandomBytes(dtype, n, 2 + n);
    std::vector<char> expected(bytes), got(bytes);
    ReduceReference(dtype, op, a.data(), b.data(), expected.data(), n);
    void *da, *db;
    ASSERT_EQ(cudaMalloc(&da, bytes), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&db, bytes), cudaSuccess);
    cudaMemcpy(da, a.data(), bytes, cudaMemcpyHostToDevice);
    cudaMemcpy(db, b.data(), bytes, cudaMemcpyHostToDevice);
    ASSERT_TRUE(k->Reduce(dtype, op, da, db, da, n, nullptr).ok());  // in place into a
    ASSERT_EQ(cudaMemcpy(got.data(), da, bytes, cudaMemcpyDeviceToHost), cudaSuccess);
    EXPECT_EQ(std::memcmp(got.data(), expected.data(), bytes), 0)
        << DTypeName(dtype) << " " << RedOpName(op) << " n=" << n;
    if (op == RedOp::kAvg) {
      DivideByReference(dtype, expected.data(), n, 3);
      ASSERT_TRUE(k->DivideBy(dtype, da, n, 3, nullptr).ok());
      cudaMemcpy(got.data(), da, bytes, cudaMemcpyDeviceToHost);
      EXPECT_EQ(std::memcmp(got.data(), expected.data(), bytes), 0) << "divide " << DTypeName(dtype);
    }
    cudaFree(da);
    cudaFree(db);
  }
}

INSTANTIATE_TEST_SUITE_P(AllTypesAndOps, ReduceCudaTest,
                         ::testing::Combine(::testing::Range(0, kNumDTypes),
                                            ::testing::Range(0, kNumRedOps)));

}  // namespace
}  // namespace sieve::kernels
