// The masked pack and unpack kernels libsieve ships (launched by
// CudaDeviceOps, as the masked all-reduce on device buffers does) against the
// CPU kernels, bit for bit, every datatype, odd sizes. Skipped (with the
// reason) without a GPU.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include "support/gpu.h"
#include "support/shipped_kernels.h"

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "kernels/masked_pack.h"

namespace sieve::kernels {
namespace {

using sieve_test::FromDevice;
using sieve_test::ToDevice;

class MaskedPackCudaTest : public ::testing::TestWithParam<int> {};

TEST_P(MaskedPackCudaTest, MatchesCpuKernelsBitForBit) {
  std::string why;
  sieve::gpu::CudaDeviceOps* k = sieve_test::ShippedKernels(&why);
  if (k == nullptr) GTEST_SKIP() << "no usable GPU: " << why;
  const DType dtype = static_cast<DType>(GetParam());
  const size_t count = 100003, es = DTypeSize(dtype);
  std::mt19937_64 rng(GetParam());
  std::vector<uint64_t> bits((count + 63) / 64, 0);
  std::vector<uint32_t> idx;
  for (size_t j = 0; j < count; ++j)
    if (rng() % 3 == 0) {
      bits[j / 64] |= uint64_t{1} << (j % 64);
      idx.push_back(static_cast<uint32_t>(j));
    }
  const size_t nnz = idx.size();
  std::vector<char> in(count * es), wire(nnz * es);
  for (char& c : in) c = static_cast<char>(rng() & 0x3f);
  for (char& c : wire) c = static_cast<char>(rng() & 0x3f);
  char *d_in = ToDevice(in), *d_wire = ToDevice(wire), *d_out = ToDevice(in);
  uint32_t* d_idx = ToDevice(idx);
  uint64_t* d_bits = ToDevice(bits);
  ASSERT_TRUE(d_in && d_wire && d_out && d_idx && d_bits);
  std::vector<char> want(nnz * es), got;
  ASSERT_TRUE(k->MaskedPack(es, d_in, d_idx, nnz, d_out, nullptr).ok());
  MaskedPack(es, in.data(), idx.data(), nnz, want.data());
  got = FromDevice(d_out, nnz * es);
  EXPECT_EQ(0, std::memcmp(got.data(), want.data(), nnz * es));
  std::vector<char> unpacked(count * es);
  ASSERT_TRUE(k->MaskedUnpack(es, d_wire, d_idx, nnz, d_bits, count, d_out, nullptr).ok());
  MaskedUnpack(es, wire.data(), bits.data(), count, unpacked.data());
  got = FromDevice(d_out, count * es);
  EXPECT_EQ(0, std::memcmp(got.data(), unpacked.data(), count * es));
  for (void* p : {static_cast<void*>(d_in), static_cast<void*>(d_wire), static_cast<void*>(d_out),
                  static_cast<void*>(d_idx), static_cast<void*>(d_bits)})
    cudaFree(p);
}

INSTANTIATE_TEST_SUITE_P(Types, MaskedPackCudaTest, ::testing::Range(0, kNumDTypes));

}  // namespace
}  // namespace sieve::kernels
