// The block-scaled kernels libsieve ships (sieve_block_quant_* in the embedded
// module, launched by CudaDeviceOps as the quantized all-gather on device buffers
// launches them) against the CPU kernels, byte for byte: every floating dtype, 8
// and 4 bits, odd counts (a partial last block, a last odd int4 element), blocks
// that are all zero, hold a NaN or an infinity, or sit on rounding ties, and a
// count past the launch's 65535 blocks (the grid-stride loop). Skipped (with the
// reason) without a GPU.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "kernels/block_quant.h"
#include "support/shipped_kernels.h"

namespace sieve::kernels {
namespace {

using sieve::gpu::CudaDeviceOps;

// `bytes` of device memory holding `host` (uninitialised when host is null).
void* ToDevice(const void* host, size_t bytes) {
  void* device = nullptr;
  EXPECT_EQ(cudaMalloc(&device, bytes + 1), cudaSuccess);
  if (host != nullptr) {
    EXPECT_EQ(cudaMemcpy(device, host, bytes, cudaMemcpyHostToDevice), cudaSuccess);
  }
  return device;
}
std::vector<char> Fetch(const void* device, size_t bytes) {
  std::vector<char> out(bytes);
  EXPECT_EQ(cudaMemcpy(out.data(), device, bytes, cudaMemcpyDeviceToHost), cudaSuccess);
  return out;
}

void Put(DType dtype, std::vector<char>* v, size_t i, float f) {
  if (dtype == DType::kFloat32) std::memcpy(v->data() + 4 * i, &f, 4);
  uint16_t h = dtype == DType::kFloat16 ? FloatToHalf(f) : FloatToBf16(f);
  if (dtype != DType::kFloat32) std::memcpy(v->data() + 2 * i, &h, 2);
}

// Random values; block 1 all zero, block 2 with a NaN, block 3 with an infinity,
// block 4 at multiples of s/2 (ties of x / s).
std::vector<char> Input(DType dtype, size_t count, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> real(-3.0f, 3.0f);
  std::vector<char> v(count * DTypeSize(dtype));
  const size_t B = kBlockQuantBlock;
  for (size_t i = 0; i < count; ++i) {
    float f = real(rng);
    if (i / B == 1) f = 0.0f;
    if (i / B == 4) f = (static_cast<float>(i % 15) - 7.0f) * 0.5f;
    Put(dtype, &v, i, f);
  }
  if (count > 2 * B + 5) Put(dtype, &v, 2 * B + 5, std::numeric_limits<float>::quiet_NaN());
  if (count > 3 * B + 9) Put(dtype, &v, 3 * B + 9, -std::numeric_limits<float>::infinity());
  return v;
}

class BlockQuantCudaTest : public ::testing::TestWithParam<DType> {};

TEST_P(BlockQuantCudaTest, MatchesCpuBitForBit) {
  std::string why;
  CudaDeviceOps* k = sieve_test::ShippedKernels(&why);
  if (k == nullptr) GTEST_SKIP() << "needs a GPU: " << why;
  const DType dtype = GetParam();
  const size_t es = DTypeSize(dtype);
  const size_t large = size_t{65535} * kBlockQuantBlock + 1001;
  for (size_t count : {size_t{1}, size_t{1283}, size_t{(1 << 18) + 3}, large})
    for (int bits : {8, 4}) {
      const std::vector<char> in = Input(dtype, count, count + bits);
      const size_t bytes = BlockQuantBytes(count, bits);
      std::vector<char> enc(bytes), out(count * es);
      BlockQuantEncode(dtype, in.data(), count, bits, enc.data());
      BlockQuantDecode(dtype, enc.data(), count, bits, out.data());
      void* din = ToDevice(in.data(), in.size());
      void* denc = ToDevice(nullptr, bytes);
      void* dout = ToDevice(nullptr, out.size());
      ASSERT_TRUE(k->BlockQuantEncode(dtype, din, count, bits, denc, nullptr).ok());
      EXPECT_EQ(Fetch(denc, bytes), enc) << "encode, count " << count << ", " << bits << " bits";
      ASSERT_TRUE(k->BlockQuantDecode(dtype, denc, count, bits, dout, nullptr).ok());
      EXPECT_EQ(Fetch(dout, out.size()), out)
          << "decode, count " << count << ", " << bits << " bits";
      cudaFree(din);
      cudaFree(denc);
      cudaFree(dout);
    }
}

INSTANTIATE_TEST_SUITE_P(Types, BlockQuantCudaTest,
                         ::testing::Values(DType::kFloat32, DType::kFloat16, DType::kBfloat16));

}  // namespace
}  // namespace sieve::kernels
