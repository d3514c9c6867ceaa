// Masked pack / gather-reduce / unpack against their scalar references, bit for
// bit, for every datatype, the ops, densities from empty to full and odd sizes
// (word edges included).
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "kernels/masked_pack.h"

namespace sieve::kernels {
namespace {

struct Mask {
  std::vector<uint64_t> bits;
  std::vector<uint32_t> idx;
};

Mask RandomMask(size_t count, double density, uint64_t seed) {
  Mask m;
  m.bits.assign((count + 63) / 64, 0);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0, 1);
  for (size_t j = 0; j < count; ++j) {
    if (u(rng) >= density) continue;
    m.bits[j / 64] |= uint64_t{1} << (j % 64);
    m.idx.push_back(static_cast<uint32_t>(j));
  }
  return m;
}

std::vector<char> RandomBytes(size_t bytes, uint64_t seed) {
  std::vector<char> out(bytes);
  std::mt19937_64 rng(seed);
  for (char& c : out) c = static_cast<char>(rng() & 0x3f);  // finite floats of every width
  return out;
}

class MaskedPackTest : public ::testing::TestWithParam<std::tuple<int, double, size_t>> {};

TEST_P(MaskedPackTest, PackGatherReduceAndUnpackMatchReference) {
  const DType dtype = static_cast<DType>(std::get<0>(GetParam()));
  const double density = std::get<1>(GetParam());
  const size_t count = std::get<2>(GetParam()), es = DTypeSize(dtype);
  Mask m = RandomMask(count, density, count * 31 + std::get<0>(GetParam()));
  const size_t nnz = m.idx.size();
  std::vector<char> in = RandomBytes(count * es, 1), wire = RandomBytes(nnz * es + 1, 2);
  std::vector<char> got(nnz * es + 1), want(nnz * es + 1);
  MaskedPack(es, in.data(), m.idx.data(), nnz, got.data());
  MaskedPackReference(es, in.data(), m.idx.data(), nnz, want.data());
  EXPECT_EQ(0, std::memcmp(got.data(), want.data(), nnz * es));
  for (RedOp op : {RedOp::kSum, RedOp::kProd, RedOp::kMax, RedOp::kMin, RedOp::kAvg}) {
    MaskedGatherReduce(dtype, op, in.data(), m.idx.data(), wire.data(), got.data(), nnz);
    MaskedGatherReduceReference(dtype, op, in.data(), m.idx.data(), wire.data(), want.data(), nnz);
    EXPECT_EQ(0, std::memcmp(got.data(), want.data(), nnz * es)) << RedOpName(op);
  }
  std::vector<char> out(count * es + 1, 0x77), ref(count * es + 1, 0x11);
  MaskedUnpack(es, wire.data(), m.bits.data(), count, out.data());
  MaskedUnpackReference(es, wire.data(), m.bits.data(), count, ref.data());
  EXPECT_EQ(0, std::memcmp(out.data(), ref.data(), count * es));
  EXPECT_EQ(out[count * es], 0x77) << "unpack wrote past count";
}

INSTANTIATE_TEST_SUITE_P(
    Kernels, MaskedPackTest,
    ::testing::Combine(::testing::Range(0, kNumDTypes),
                       ::testing::Values(0.0, 0.001, 0.2, 0.5, 0.9, 1.0),
                       ::testing::Values(size_t{0}, size_t{1}, size_t{63}, size_t{64},
                                         size_t{65}, size_t{10007})));

}  // namespace
}  // namespace sieve::kernels
