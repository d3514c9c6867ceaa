// SIEVE_NCCL_MODE's quantized modes through NCCL's names on real processes:
// q7 quantizes ncclReduceScatter and ncclAllReduce (float sum/avg) at 7 levels,
// bit for bit the one-process reference with seed SIEVE_TERNARY_SEED and step =
// the communicator's quantized-call number; rs-ternary+ag8 quantizes
// ncclReduceScatter ternary and ncclAllGather as block-scaled int8 (within the
// bound, not exact, the same bytes on every rank) while an int32 all-gather and
// the all-reduce stay exact.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "nccl_abi.h"
#include "support/mp_harness.h"
#include "support/ternary_reference.h"

namespace {

using sieve_test::RankSpec;
using sieve_test::RunRanks;

ncclComm_t Init(int rank, int n, const sieveUniqueId& sid) {
  ncclUniqueId id;
  std::memcpy(id.internal, sid.internal, sizeof id.internal);
  ncclComm_t comm = nullptr;
  return ncclCommInitRank(&comm, n, id, rank) == ncclSuccess ? comm : nullptr;
}

// `nranks` ranks with the shim in SIEVE_NCCL_MODE `mode`.
RankSpec ModeSpec(int nranks, const char* mode) {
  RankSpec spec;
  spec.nranks = nranks;
  spec.kill_after_s = 60;
  spec.env = {{"SIEVE_NCCL_MODE", mode}, {"SIEVE_TIMEOUT", "20"}};
  return spec;
}

// A quantized reference case: count elements in all, seed 1 (the default
// SIEVE_TERNARY_SEED), block 2048, float32.
sieve_test::TernaryCase Case(int n, size_t count, uint64_t step, int levels, sieveRedOp_t op) {
  sieve_test::TernaryCase c;
  c.input_seed = 40 + step;
  c.nranks = n;
  c.count = count;
  c.seed = 1;
  c.step = step;
  c.levels = levels;
  c.op = op;
  return c;
}

int RunQ7(int rank, int n, const sieveUniqueId& sid) {
  ncclComm_t comm = Init(rank, n, sid);
  RANK_CHECK(comm != nullptr, "%s", ncclGetLastError(nullptr));
  const size_t recvcount = 3001;
  // Step 0: a reduce-scatter (avg); step 1: an all-reduce (sum).
  const sieve_test::TernaryCase rs = Case(n, recvcount * n, 0, 7, sieveAvg);
  std::vector<char> in = sieve_test::TernaryCaseInput(rs, rank), out(recvcount * 4);
  RANK_CHECK(ncclReduceScatter(in.data(), out.data(), recvcount, ncclFloat32, ncclAvg, comm,
                               nullptr) == ncclSuccess,
             "%s", ncclGetLastError(comm));
  const std::vector<char> want = sieve_test::ExpectedTernary(rs);
  RANK_CHECK(std::memcmp(out.data(), want.data() + rank * recvcount * 4, recvcount * 4) == 0,
             "q7 reduce-scatter differs from the 7-level reference");
  const sieve_test::TernaryCase ar = Case(n, 5003, 1, 7, sieveSum);
  std::vector<char> g = sieve_test::TernaryCaseInput(ar, rank);
  RANK_CHECK(ncclAllReduce(g.data(), g.data(), ar.count, ncclFloat32, ncclSum, comm, nullptr) ==
                 ncclSuccess,
             "%s", ncclGetLastError(comm));
  RANK_CHECK(g == sieve_test::ExpectedTernary(ar), "q7 all-reduce differs from the reference");
  RANK_CHECK(ncclCommDestroy(comm) == ncclSuccess, "destroy");
  return 0;
}

TEST(ShimQuantized, Q7ReduceScatterAndAllReduceMatchTheReference) {
  EXPECT_EQ(RunRanks(ModeSpec(3, "q7"), RunQ7), "");
}

int RunRsTernaryAg8(int rank, int n, const sieveUniqueId& sid) {
  ncclComm_t comm = Init(rank, n, sid);
  RANK_CHECK(comm != nullptr, "%s", ncclGetLastError(nullptr));
  const size_t recvcount = 2049;
  const sieve_test::TernaryCase rs = Case(n, recvcount * n, 0, 1, sieveSum);
  std::vector<char> in = sieve_test::TernaryCaseInput(rs, rank);
  float* mine = reinterpret_cast<float*>(in.data()) + rank * recvcount;  // in place
  RANK_CHECK(ncclReduceScatter(in.data(), mine, recvcount, ncclFloat32, ncclSum, comm, nullptr) ==
                 ncclSuccess,
             "%s", ncclGetLastError(comm));
  const std::vector<char> want = sieve_test::ExpectedTernary(rs);
  RANK_CHECK(std::memcmp(mine, want.data() + rank * recvcount * 4, recvcount * 4) == 0,
             "ternary reduce-scatter differs from the reference");
  // The all-gather of every rank's shard: int8, within the bound, not exact.
  std::vector<float> shard(recvcount), all(recvcount * n);
  for (size_t j = 0; j < recvcount; ++j) shard[j] = std::sin(0.37f * j + rank) * (1 + rank);
  RANK_CHECK(
      ncclAllGather(shard.data(), all.data(), recvcount, ncclFloat32, comm, nullptr) == ncclSuccess,
      "%s", ncclGetLastError(comm));
  long inexact = 0;
  for (int r = 0; r < n; ++r)
    for (size_t j = 0; j < recvcount; ++j) {
      const double x = std::sin(0.37f * j + r) * (1 + r);
      const double y = all[r * recvcount + j];
      // m <= 1 + r: s / 2 <= (1 + r) / 254, plus the float32 terms of the bound.
      RANK_CHECK(std::fabs(y - x) <= (1 + r) / 254.0 * (1 + 1e-5) + 1e-6,
                 "all-gather element %zu of rank %d: %g for %g", j, r, y, x);
      inexact += y != static_cast<float>(x);
    }
  RANK_CHECK(inexact > 0, "the all-gather was exact: not quantized");
  // Integers and the all-reduce stay exact.
  std::vector<int32_t> ids(5, rank), gathered(5 * n);
  RANK_CHECK(ncclAllGather(ids.data(), gathered.data(), 5, ncclInt32, comm, nullptr) == ncclSuccess,
             "%s", ncclGetLastError(comm));
  for (int r = 0; r < n; ++r) RANK_CHECK(gathered[r * 5 + 4] == r, "int32 all-gather changed");
  float one = 1.0f + rank;
  RANK_CHECK(ncclAllReduce(&one, &one, 1, ncclFloat32, ncclSum, comm, nullptr) == ncclSuccess, "%s",
             ncclGetLastError(comm));
  RANK_CHECK(one == n * (n + 1) / 2.0f, "the all-reduce was not dense: %g", one);
  RANK_CHECK(ncclCommDestroy(comm) == ncclSuccess, "destroy");
  return 0;
}

TEST(ShimQuantized, RsTernaryAg8QuantizesTheShardedPair) {
  EXPECT_EQ(RunRanks(ModeSpec(4, "rs-ternary+ag8"), RunRsTernaryAg8), "");
}

}  // namespace
