// Masked all-reduce on real processes against the reference: densities
// {0, 0.001, 0.2, 0.5, 0.9, 1} x every datatype x sum/avg/max x in-place and
// out-of-place, odd counts, n in {2, 3, 4, 7}, ring and tree; plus the bytes
// each rank puts on the wire.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "support/mask_reference.h"
#include "support/mp_harness.h"
#include "support/reference.h"

namespace sieve_test {
namespace {

const sieveRedOp_t kOps[] = {sieveSum, sieveAvg, sieveMax};
const double kDensities[] = {0, 0.001, 0.2, 0.5, 0.9, 1.0};

struct MaskedCase {
  sieveDataType_t dtype;
  sieveRedOp_t op;
  bool in_place;
  uint64_t seed;
};

// Runs one masked all-reduce with `mask` registered as `handle`; returns the wrong elements.
long RunMaskedCase(sieveComm_t comm, int rank, int n, sieveMask_t handle,
                   const std::vector<uint8_t>& mask, const MaskedCase& c) {
  const size_t count = mask.size(), es = TypeSize(c.dtype);
  std::vector<char> send(count * es + 1), recv(count * es + 1, 0x5a), expected(count * es + 1);
  char* sendp = c.in_place ? recv.data() : send.data();
  FillInput(c.seed, rank, c.dtype, c.op, 0, count, sendp);
  if (sieveAllReduceMasked(sendp, recv.data(), count, c.dtype, c.op, handle, comm, nullptr) !=
      sieveSuccess) {
    std::fprintf(stderr, "rank %d: %s %s: %s\n", rank, TypeName(c.dtype), OpName(c.op),
                 sieveGetLastError(comm));
    return -1;
  }
  ExpectedMasked(c.seed, n, c.dtype, c.op, mask, expected.data());
  size_t first = 0;
  size_t wrong = CountMismatches(recv.data(), expected.data(), count, es, &first);
  if (wrong > 0)
    std::fprintf(stderr, "rank %d: %s %s %s nnz %zu: %zu of %zu wrong (first at %zu)\n", rank,
                 TypeName(c.dtype), OpName(c.op), c.in_place ? "in-place" : "out-of-place",
                 Nnz(mask), wrong, count, first);
  return static_cast<long>(wrong);
}

// Every density, type, op and placement on one registered mask per density.
int RunSweep(int rank, int n, const sieveUniqueId& id) {
  sieveComm_t comm = nullptr;
  RANK_CHECK(sieveCommInitRank(&comm, n, id, rank) == sieveSuccess, "%s",
             sieveGetLastError(nullptr));
  long bad = 0;
  uint64_t seed = 500 * n;
  for (double density : kDensities) {
    const size_t count = density < 0.01 ? 4001 : 1023;  // odd; 4001 so 0.001 keeps a few
    std::vector<uint8_t> mask = RandomMask(++seed, count, density);
    bool bitmap = (seed % 2) == 0;
    std::vector<uint8_t> passed = bitmap ? ToBitmap(mask) : mask;
    sieveMask_t handle = nullptr;
    RANK_CHECK(sieveMaskRegister(comm, passed.data(), bitmap ? sieveMaskBitmap : sieveMaskBytes,
                                 count, sieveMaskStrict, &handle) == sieveSuccess,
               "register: %s", sieveGetLastError(comm));
    size_t nnz = 0;
    RANK_CHECK(sieveMaskNnz(handle, &nnz) == sieveSuccess && nnz == Nnz(mask), "nnz %zu", nnz);
    for (sieveDataType_t dtype : kAllTypes)
      for (sieveRedOp_t op : kOps)
        for (bool in_place : {false, true})
          bad += RunMaskedCase(comm, rank, n, handle, mask, {dtype, op, in_place, ++seed}) != 0;
    RANK_CHECK(sieveMaskDeregister(handle) == sieveSuccess, "deregister");
  }
  sieveCounters_t c{};
  RANK_CHECK(sieveCommGetCounters(comm, &c) == sieveSuccess, "counters");
  const uint64_t calls = 6 * 10 * 3 * 2;
  RANK_CHECK(c.masked_collectives == calls, "masked_collectives %llu, expected %llu",
             (unsigned long long)c.masked_collectives, (unsigned long long)calls);
  RANK_CHECK(sieveCommDestroy(comm) == sieveSuccess, "destroy");
  RANK_CHECK(bad == 0, "%ld cases wrong", bad);
  return 0;
}

class MaskedSweepTest : public ::testing::TestWithParam<std::tuple<const char*, int>> {};

TEST_P(MaskedSweepTest, EveryDensityTypeOpAndPlacementMatchesReference) {
  RankSpec spec;
  spec.nranks = std::get<1>(GetParam());
  spec.env = {{"SIEVE_ALGO", std::get<0>(GetParam())}};
  EXPECT_EQ(RunRanks(spec, RunSweep), "");
}

INSTANTIATE_TEST_SUITE_P(Ranks, MaskedSweepTest,
                         ::testing::Combine(::testing::Values("ring", "tree", "direct"),
                                            ::testing::Values(2, 3, 4, 7)));
INSTANTIATE_TEST_SUITE_P(OneShot, MaskedSweepTest,
                         ::testing::Combine(::testing::Values("oneshot"), ::testing::Values(2, 3, 4)));

// Many pipelined segments (small SIEVE_SEGMENT_BYTES) on a larger odd count.
int RunLarge(int rank, int n, const sieveUniqueId& id) {
  sieveComm_t comm = nullptr;
  RANK_CHECK(sieveCommInitRank(&comm, n, id, rank) == sieveSuccess, "%s",
             sieveGetLastError(nullptr));
  std::vector<uint8_t> mask = RandomMask(99, 300007, 0.3);
  sieveMask_t handle = nullptr;
  RANK_CHECK(sieveMaskRegister(comm, mask.data(), sieveMaskBytes, mask.size(), sieveMaskStrict,
                               &handle) == sieveSuccess, "%s", sieveGetLastError(comm));
  long bad = 0;
  uint64_t seed = 4242;
  for (sieveDataType_t dtype : {sieveFloat32, sieveBfloat16, sieveInt64})
    for (bool in_place : {false, true})
      bad += RunMaskedCase(comm, rank, n, handle, mask, {dtype, sieveAvg, in_place, ++seed}) != 0;
  RANK_CHECK(sieveMaskDeregister(handle) == sieveSuccess, "deregister");
  RANK_CHECK(sieveCommDestroy(comm) == sieveSuccess, "destroy");
  RANK_CHECK(bad == 0, "%ld cases wrong", bad);
  return 0;
}

class MaskedLargeTest : public ::testing::TestWithParam<const char*> {};

TEST_P(MaskedLargeTest, PipelinedSegmentsMatchReference) {
  RankSpec spec;
  spec.nranks = 4;
  spec.env = {{"SIEVE_ALGO", GetParam()}, {"SIEVE_SEGMENT_BYTES", "16k"}};
  EXPECT_EQ(RunRanks(spec, RunLarge), "");
}

INSTANTIATE_TEST_SUITE_P(Algos, MaskedLargeTest, ::testing::Values("ring", "tree", "direct"));

// Bytes: registration all-gathers 24 bytes per rank (count, policy, hash), (n-1)*24 sent; the
// masked ring then sends exactly the dense ring formula for nnz elements.
int RunMaskedTraffic(int rank, int n, const sieveUniqueId& id) {
  sieveComm_t comm = nullptr;
  RANK_CHECK(sieveCommInitRank(&comm, n, id, rank) == sieveSuccess, "%s",
             sieveGetLastError(nullptr));
  const size_t count = 200003;
  std::vector<uint8_t> mask = RandomMask(7, count, 0.5);
  const size_t nnz = Nnz(mask);
  sieveMask_t handle = nullptr;
  RANK_CHECK(sieveMaskRegister(comm, mask.data(), sieveMaskBytes, count, sieveMaskStrict,
                               &handle) == sieveSuccess, "%s", sieveGetLastError(comm));
  sieveCounters_t reg{}, c{};
  RANK_CHECK(sieveCommGetCounters(comm, &reg) == sieveSuccess, "counters");
  RANK_CHECK(reg.bytes_sent <= 24u * (n - 1), "registration sent %llu > %d",
             (unsigned long long)reg.bytes_sent, 24 * (n - 1));
  std::vector<float> data(count);
  FillInput(5, rank, sieveFloat32, sieveSum, 0, count, data.data());
  RANK_CHECK(sieveAllReduceMasked(data.data(), data.data(), count, sieveFloat32, sieveSum, handle,
                                  comm, nullptr) == sieveSuccess, "%s", sieveGetLastError(comm));
  RANK_CHECK(sieveCommGetCounters(comm, &c) == sieveSuccess, "counters");
  auto chunk = [&](int r) { return nnz * (r + 1) / n - nnz * r / n; };
  uint64_t expect_sent = ((nnz - chunk(rank)) + (nnz - chunk((rank + 1) % n))) * 4;
  uint64_t sent = c.bytes_sent - reg.bytes_sent;
  RANK_CHECK(sent == expect_sent, "masked all-reduce sent %llu, expected %llu (nnz %zu)",
             (unsigned long long)sent, (unsigned long long)expect_sent, nnz);
  RANK_CHECK(c.masked_collectives == 1, "masked_collectives %llu",
             (unsigned long long)c.masked_collectives);
  RANK_CHECK(sieveMaskDeregister(handle) == sieveSuccess, "deregister");
  RANK_CHECK(sieveCommDestroy(comm) == sieveSuccess, "destroy");
  return 0;
}

class MaskedTrafficTest : public ::testing::TestWithParam<int> {};

TEST_P(MaskedTrafficTest, RingFormulaForNnzPlusTwentyFourBytesPerPeerToRegister) {
  RankSpec spec;
  spec.nranks = GetParam();
  spec.env = {{"SIEVE_ALGO", "ring"}};
  EXPECT_EQ(RunRanks(spec, RunMaskedTraffic), "");
}

INSTANTIATE_TEST_SUITE_P(Ranks, MaskedTrafficTest, ::testing::Values(2, 3, 5));

}  // namespace
}  // namespace sieve_test
