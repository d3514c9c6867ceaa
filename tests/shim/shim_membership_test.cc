// ncclCommShrink and ncclCommRevoke through NCCL's names on real processes: a rank dies, the
// survivors' next all-reduce fails, they shrink with NCCL_SHRINK_ABORT and the new communicator
// sums exactly; a revoked communicator refuses collectives.
#include <gtest/gtest.h>

#include <csignal>
#include <cstring>
#include <string>
#include <vector>

#include "nccl_abi.h"
#include "support/mp_harness.h"

namespace {

using sieve_test::RankSpec;
using sieve_test::RunRanks;

constexpr int kVictim = 1;

// An int32 sum all-reduce of `count` elements over `n` ranks; the number of wrong elements, or
// -1 when the call failed.
long SumCheck(ncclComm_t comm, int rank, int n, size_t count) {
  std::vector<int32_t> buf(count);
  for (size_t i = 0; i < count; ++i) buf[i] = static_cast<int32_t>((rank + 1) * (i % 13 + 1));
  if (ncclAllReduce(buf.data(), buf.data(), count, ncclInt32, ncclSum, comm, nullptr) != ncclSuccess)
    return -1;
  long wrong = 0;
  for (size_t i = 0; i < count; ++i) wrong += buf[i] != static_cast<int32_t>(n * (n + 1) / 2 * (i % 13 + 1));
  return wrong;
}

TEST(ShimMembership, ShrinkAfterADeathAndRevoke) {
  RankSpec spec;
  spec.nranks = 3;
  spec.kill_after_s = 60;
  spec.env = {{"SIEVE_TIMEOUT", "20"}};
  std::string failures = RunRanks(spec, [](int rank, int nranks, const sieveUniqueId& sid) {
    ncclUniqueId id;
    std::memcpy(id.internal, sid.internal, sizeof id.internal);
    ncclComm_t comm = nullptr;
    RANK_CHECK(ncclCommInitRank(&comm, nranks, id, rank) == ncclSuccess, "%s",
               ncclGetLastError(nullptr));
    RANK_CHECK(SumCheck(comm, rank, nranks, 4099) == 0, "before: %s", ncclGetLastError(comm));
    if (rank == kVictim) raise(SIGKILL);
    RANK_CHECK(SumCheck(comm, rank, nranks, 4099) == -1, "an all-reduce without rank 1 succeeded");
    int exclude[] = {kVictim};
    ncclComm_t shrunk = nullptr;
    RANK_CHECK(ncclCommShrink(comm, exclude, 1, &shrunk, nullptr, NCCL_SHRINK_ABORT) == ncclSuccess,
               "shrink: %s", ncclGetLastError(comm));
    int count = 0, me = -1;
    ncclCommCount(shrunk, &count);
    ncclCommUserRank(shrunk, &me);
    RANK_CHECK(count == 2 && me == (rank == 0 ? 0 : 1), "became %d of %d", me, count);
    RANK_CHECK(SumCheck(shrunk, me, count, 100003) == 0, "after: %s", ncclGetLastError(shrunk));
    RANK_CHECK(ncclCommRevoke(shrunk, 5) == ncclInvalidArgument, "bad flags");
    RANK_CHECK(ncclCommRevoke(shrunk, NCCL_REVOKE_DEFAULT) == ncclSuccess, "revoke: %s",
               ncclGetLastError(shrunk));
    RANK_CHECK(SumCheck(shrunk, me, count, 10) == -1, "a revoked communicator ran a collective");
    RANK_CHECK(std::string(ncclGetLastError(shrunk)).find("revoked") != std::string::npos, "%s",
               ncclGetLastError(shrunk));
    RANK_CHECK(ncclCommDestroy(shrunk) == ncclSuccess, "destroy");
    RANK_CHECK(ncclCommDestroy(comm) == ncclSuccess, "destroy parent");
    return 0;
  });
  EXPECT_EQ(failures, "rank 1 killed by signal 9\n");
}

}  // namespace
