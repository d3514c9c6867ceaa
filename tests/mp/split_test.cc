// sieveCommSplit in real processes: colors and keys give the right sub-communicators (size,
// rank order by key then parent rank, NULL for SIEVE_SPLIT_NOCOLOR), each sub-communicator
// reduces correctly on its own, the parent keeps working, and a bad color fails on every rank.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "support/mp_harness.h"

namespace sieve_test {
namespace {

constexpr size_t kCount = 1001;  // odd: exercises uneven ring chunks

// All-reduces kCount doubles (element i of rank r: (r + 1) * (i + 1)) on comm and checks the
// sum against expected_rank_sum = sum over its ranks' (r + 1) values.
int CheckAllReduce(sieveComm_t comm, int value_rank, double expected_rank_sum, const char* what) {
  std::vector<double> send(kCount), recv(kCount, -1);
  for (size_t i = 0; i < kCount; ++i) send[i] = (value_rank + 1) * static_cast<double>(i + 1);
  RANK_CHECK(sieveAllReduce(send.data(), recv.data(), kCount, sieveDouble, sieveSum, comm,
                            nullptr) == sieveSuccess,
             "%s: %s", what, sieveGetLastError(comm));
  for (size_t i = 0; i < kCount; ++i)
    RANK_CHECK(recv[i] == expected_rank_sum * static_cast<double>(i + 1),
               "%s: element %zu is %g, expected %g", what, i, recv[i],
               expected_rank_sum * static_cast<double>(i + 1));
  return 0;
}

// Five ranks, colors {0, 1, 0, 1, NOCOLOR}, keys reversed (key = 10 - rank): color 0 holds
// parent ranks {2, 0} in that order, color 1 holds {3, 1}, rank 4 gets NULL.
int RunColorsAndKeys(int rank, int nranks, const sieveUniqueId& id) {
  sieveComm_t parent = nullptr;
  RANK_CHECK(sieveCommInitRank(&parent, nranks, id, rank) == sieveSuccess, "%s",
             sieveGetLastError(nullptr));
  const int colors[5] = {0, 1, 0, 1, SIEVE_SPLIT_NOCOLOR};
  sieveComm_t sub = reinterpret_cast<sieveComm_t>(&parent);  // must be overwritten
  RANK_CHECK(sieveCommSplit(parent, colors[rank], 10 - rank, &sub) == sieveSuccess, "split: %s",
             sieveGetLastError(parent));
  if (rank == 4) {
    RANK_CHECK(sub == nullptr, "NOCOLOR must give a NULL communicator");
  } else {
    const int expected_rank[5] = {1, 1, 0, 0, -1};
    int size = 0, sub_rank = -1;
    RANK_CHECK(sieveCommCount(sub, &size) == sieveSuccess && size == 2, "size %d", size);
    RANK_CHECK(sieveCommUserRank(sub, &sub_rank) == sieveSuccess && sub_rank == expected_rank[rank],
               "rank %d in the split, expected %d", sub_rank, expected_rank[rank]);
    // Color 0: parent ranks 0 and 2 contribute 1 + 3; color 1: ranks 1 and 3 contribute 2 + 4.
    double expected = colors[rank] == 0 ? 4.0 : 6.0;
    if (CheckAllReduce(sub, rank, expected, "sub all-reduce") != 0) return 1;
    if (CheckAllReduce(sub, rank, expected, "second sub all-reduce") != 0) return 1;
    RANK_CHECK(sieveCommDestroy(sub) == sieveSuccess, "destroy sub");
  }
  if (CheckAllReduce(parent, rank, 15.0, "parent all-reduce after the split") != 0) return 1;
  RANK_CHECK(sieveCommDestroy(parent) == sieveSuccess, "destroy parent");
  return 0;
}

TEST(CommSplit, ColorsKeysNoColorAndParentAfter) {
  RankSpec spec;
  spec.nranks = 5;
  spec.kill_after_s = 120;
  spec.env = {{"SIEVE_TIMEOUT", "30"}};
  EXPECT_EQ(RunRanks(spec, RunColorsAndKeys), "");
}

// Equal keys keep the parent order; a split of a split works too.
int RunEqualKeysAndNested(int rank, int nranks, const sieveUniqueId& id) {
  sieveComm_t parent = nullptr;
  RANK_CHECK(sieveCommInitRank(&parent, nranks, id, rank) == sieveSuccess, "%s",
             sieveGetLastError(nullptr));
  sieveComm_t all = nullptr;
  RANK_CHECK(sieveCommSplit(parent, 7, 0, &all) == sieveSuccess, "%s", sieveGetLastError(parent));
  int sub_rank = -1;
  RANK_CHECK(sieveCommUserRank(all, &sub_rank) == sieveSuccess && sub_rank == rank,
             "equal keys: rank %d, expected %d", sub_rank, rank);
  sieveComm_t half = nullptr;  // ranks {0, 2} and {1, 3} by parity
  RANK_CHECK(sieveCommSplit(all, rank % 2, rank, &half) == sieveSuccess, "%s",
             sieveGetLastError(all));
  RANK_CHECK(sieveCommUserRank(half, &sub_rank) == sieveSuccess && sub_rank == rank / 2,
             "nested: rank %d, expected %d", sub_rank, rank / 2);
  if (CheckAllReduce(half, rank, rank % 2 == 0 ? 4.0 : 6.0, "nested all-reduce") != 0) return 1;
  RANK_CHECK(sieveCommDestroy(half) == sieveSuccess, "destroy half");
  RANK_CHECK(sieveCommDestroy(all) == sieveSuccess, "destroy all");
  RANK_CHECK(sieveCommDestroy(parent) == sieveSuccess, "destroy parent");
  return 0;
}

TEST(CommSplit, EqualKeysKeepParentOrderAndSplitsNest) {
  RankSpec spec;
  spec.nranks = 4;
  spec.kill_after_s = 120;
  spec.env = {{"SIEVE_TIMEOUT", "30"}};
  EXPECT_EQ(RunRanks(spec, RunEqualKeysAndNested), "");
}

// One rank passes color -5: every rank fails with InvalidArgument naming it, promptly, and the
// parent stays usable.
int RunBadColor(int rank, int nranks, const sieveUniqueId& id) {
  sieveComm_t parent = nullptr;
  RANK_CHECK(sieveCommInitRank(&parent, nranks, id, rank) == sieveSuccess, "%s",
             sieveGetLastError(nullptr));
  sieveComm_t sub = nullptr;
  sieveResult_t r = sieveCommSplit(parent, rank == 1 ? -5 : 0, 0, &sub);
  RANK_CHECK(r == sieveInvalidArgument, "split with a bad color returned %d", r);
  RANK_CHECK(sub == nullptr, "no communicator on failure");
  std::string msg = sieveGetLastError(parent);
  RANK_CHECK(msg.find("rank 1") != std::string::npos && msg.find("-5") != std::string::npos,
             "message does not name rank 1 and its color: %s", msg.c_str());
  if (CheckAllReduce(parent, rank, 6.0, "parent all-reduce after a failed split") != 0) return 1;
  RANK_CHECK(sieveCommDestroy(parent) == sieveSuccess, "destroy parent");
  return 0;
}

TEST(CommSplit, BadColorFailsOnEveryRank) {
  RankSpec spec;
  spec.nranks = 3;
  spec.kill_after_s = 60;
  spec.env = {{"SIEVE_TIMEOUT", "20"}};
  EXPECT_EQ(RunRanks(spec, RunBadColor), "");
}

}  // namespace
}  // namespace sieve_test
