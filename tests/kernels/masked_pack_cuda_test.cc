// CUDA masked pack / gather-reduce / unpack against the CPU kernels, bit for
// bit, every datatype, odd sizes. Skipped (with the reason) without a GPU.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include "support/gpu.h"

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "kernels/masked_pack.h"
#include "kernels/masked_pack_cuda.h"

namespace sieve::kernels {
namespace {

using sieve_test::FromDevice;
using sieve_test::HaveGpu;
using sieve_test::ToDevice;

class MaskedPackCudaTest : public ::testing::TestWithParam<int> {};

TEST_P(MaskedPackCudaTest, MatchesCpuKernelsBitForBit) {
  std::string why;
  if (!HaveGpu(&why)) GTEST_SKIP() << "no usable GPU: " << why;
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
  ASSERT_EQ(0, MaskedPackCuda(es, d_in, d_idx, nnz, d_out, nullptr));
  MaskedPack(es, in.data(), idx.data(), nnz, want.data());
  got = FromDevice(d_out, nnz * es);
  EXPECT_EQ(0, std::memcmp(got.data(), want.data(), nnz * es));
  for (RedOp op : {RedOp::kSum, RedOp::kProd, RedOp::kMax, RedOp::kMin, RedOp::kAvg}) {
    ASSERT_EQ(0, MaskedGatherReduceCuda(dtype, op, d_in, d_idx, d_wire, d_out, nnz, nullptr));
    MaskedGatherReduce(dtype, op, in.data(), idx.data(), wire.data(), want.data(), nnz);
    got = FromDevice(d_out, nnz * es);
    EXPECT_EQ(0, std::memcmp(got.data(), want.data(), nnz * es)) << RedOpName(op);
  }
  std::vector<char> unpacked(count * es);
  ASSERT_EQ(0, MaskedUnpackCuda(es, d_wire, d_idx, nnz, d_bits, count, d_out, nullptr));
  MaskedUnpack(es, wire.data(), bits.data(), count, unpacked.data());
  got = FromDevice(d_out, count * es);
  EXPECT_EQ(0, std::memcmp(got.data(), unpacked.data(), count * es));
  // The same by two packed ranges (as the last hop delivers segments), cut mid-word.
  const size_t cut = nnz / 2, mid = idx[cut - 1] + 1;
  ASSERT_EQ(0, MaskedUnpackRangeCuda(es, d_wire + cut * es, d_idx + cut, nnz - cut, d_bits, mid,
                                     count, d_in, nullptr));
  ASSERT_EQ(0, MaskedUnpackRangeCuda(es, d_wire, d_idx, cut, d_bits, 0, mid, d_in, nullptr));
  got = FromDevice(d_in, count * es);
  EXPECT_EQ(0, std::memcmp(got.data(), unpacked.data(), count * es));
  for (void* p : {static_cast<void*>(d_in), static_cast<void*>(d_wire), static_cast<void*>(d_out),
                  static_cast<void*>(d_idx), static_cast<void*>(d_bits)})
    cudaFree(p);
}

INSTANTIATE_TEST_SUITE_P(Types, MaskedPackCudaTest, ::testing::Range(0, kNumDTypes));

}  // namespace
}  // namespace sieve::kernels
