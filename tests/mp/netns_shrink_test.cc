// Elastic membership across hosts (docs/membership.md), two ranks on each of two
// network-namespace "hosts" (support/two_hosts.h). A rank on host b is killed in the middle of
// an all-reduce: every survivor (its host neighbour and both ranks of host a, which learn of
// the death only over the link) fails the call within SIEVE_TIMEOUT, revokes, agrees on the
// failed rank, shrinks it away and gets an exact all-reduce on the new communicator, whose
// hosts are now uneven (2 + 1). The hosts are partitioned: each half shrinks to itself. Needs
// root and iproute2; skipped with the reason otherwise.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

#include "support/fault_support.h"
#include "support/mp_harness.h"
#include "support/two_hosts.h"

namespace sieve_test {
namespace {

constexpr int kRanks = 4;
constexpr int kVictim = 3;                  // host b, local index 1
constexpr size_t kCount = size_t{1} << 20;  // 4 MiB of float32
constexpr double kTimeoutS = 5;             // SIEVE_TIMEOUT
constexpr const char* kTimeout = "5";

std::string List(const int* ranks, int n) {
  std::string s;
  for (int i = 0; i < n; ++i) s += (i ? "," : "") + std::to_string(ranks[i]);
  return s;
}

// The survivors' side: revoke, agree that `expected` (ascending) failed, shrink them away,
// one exact all-reduce on the new communicator. `since`: when the fault happened.
int ShrinkAway(sieveComm_t comm, int rank, const std::vector<int>& expected, double since) {
  RANK_CHECK(sieveCommRevoke(comm, 0) == sieveSuccess, "revoke: %s", sieveGetLastError(comm));
  int failed[kRanks] = {}, nfailed = -1;
  RANK_CHECK(sieveCommAgreeFailedRanks(comm, failed, kRanks, &nfailed) == sieveSuccess, "agree: %s",
             sieveGetLastError(comm));
  RANK_CHECK(std::vector<int>(failed, failed + nfailed) == expected,
             "rank %d: agreed failed ranks [%s], expected [%s]", rank,
             List(failed, nfailed).c_str(),
             List(expected.data(), static_cast<int>(expected.size())).c_str());
  sieveComm_t shrunk = nullptr;
  RANK_CHECK(sieveCommShrink(comm, failed, nfailed, &shrunk, nullptr, SIEVE_SHRINK_DEFAULT) ==
                 sieveSuccess,
             "shrink: %s", sieveGetLastError(comm));
  int new_rank = -1, new_size = -1, below = 0;
  for (int r : expected) below += r < rank;
  sieveCommUserRank(shrunk, &new_rank);
  sieveCommCount(shrunk, &new_size);
  RANK_CHECK(new_size == kRanks - nfailed && new_rank == rank - below, "rank %d became %d of %d",
             rank, new_rank, new_size);
  sieveResult_t res;
  long wrong = CheckedAllReduce(shrunk, new_rank, new_size, kCount + 3, &res);
  RANK_CHECK(res == sieveSuccess, "all-reduce on the shrunk communicator: %s",
             sieveGetLastError(shrunk));
  RANK_CHECK(wrong == 0, "rank %d: %ld wrong elements on the shrunk communicator", rank, wrong);
  std::fprintf(stderr,
               "rank %d (host %d): exact all-reduce on the shrunk communicator %.3f s "
               "after the fault\n",
               rank, TwoHosts::HostOf(rank), NowS() - since);
  RANK_CHECK(sieveCommDestroy(shrunk) == sieveSuccess, "destroy: %s", sieveGetLastError(nullptr));
  RANK_CHECK(sieveCommDestroy(comm) == sieveSuccess, "parent destroy");
  return 0;
}

TEST(NetnsShrinkTest, DeadRankOnAnotherHostIsShrunkAway) {
  TwoHosts hosts;
  if (!hosts.skip().empty()) GTEST_SKIP() << hosts.skip();
  SharedFaultBoard board;
  RankSpec spec = HostSpec(hosts, kTimeout);
  // Its 6th data segment: past the host-local reduce-scatter, in the inter-host step.
  spec.env.push_back({"SIEVE_FAULT", "rank=3,on=send,min=65536,nth=6,do=kill"});
  spec.watch = VictimWatch(board.get(), kRanks, kVictim, /*stopped=*/false, 0);
  std::string failures = RunRanks(spec, [&](int rank, int nranks, const sieveUniqueId& id) {
    board->pid[rank].store(getpid());
    sieveComm_t comm = nullptr;
    RANK_CHECK(InitComm(rank, nranks, id, &comm) == 0, "%s", sieveGetLastError(nullptr));
    sieveResult_t res;
    RANK_CHECK(CheckedAllReduce(comm, rank, nranks, 1001, &res) == 0, "warm-up");
    CheckedAllReduce(comm, rank, nranks, kCount, &res);  // rank 3 dies inside
    RANK_CHECK(rank != kVictim, "the victim survived");
    RANK_CHECK(res != sieveSuccess, "the all-reduce succeeded without rank %d", kVictim);
    RANK_CHECK(WaitFor([&] { return board->event_s.load() > 0; }, 10), "no death seen");
    const double died = board->event_s.load();
    const double detect = NowS() - died;
    std::fprintf(stderr, "rank %d (host %d): failed %.3f s after rank %d died: %s\n", rank,
                 TwoHosts::HostOf(rank), detect, kVictim, sieveGetLastError(comm));
    EXPECT_LE(detect, kTimeoutS) << "the death was not found within SIEVE_TIMEOUT";
    if (ShrinkAway(comm, rank, {kVictim}, died) != 0) return 1;
    board->rejoined.fetch_add(1);
    return 0;
  });
  EXPECT_EQ(failures, "rank 3 killed by signal 9\n");
  EXPECT_EQ(board->rejoined.load(), kRanks - 1);
}

// A silent partition (blackhole routes) between two collectives: each host's ranks fail their
// next all-reduce at SIEVE_TIMEOUT, agree that the other host's ranks failed (silent past the
// agreement's bound after a stall) and shrink to their own half, whose all-reduce is exact. A
// partition looks like a death from either side, so both halves go on: docs/membership.md.
TEST(NetnsShrinkTest, PartitionedHostsEachShrinkToTheirOwnHalf) {
  TwoHosts hosts;
  if (!hosts.skip().empty()) GTEST_SKIP() << hosts.skip();
  SharedFaultBoard board;
  const double kPartitionTimeoutS = 2;
  RankSpec spec = HostSpec(hosts, "2");
  spec.watch = [&] {
    if (WaitFor([&] { return board->started.load() == kRanks; }, 50))
      board->event_s.store(hosts.Partition() ? NowS() : -1);
  };
  std::string failures = RunRanks(spec, [&](int rank, int nranks, const sieveUniqueId& id) {
    sieveComm_t comm = nullptr;
    RANK_CHECK(InitComm(rank, nranks, id, &comm) == 0, "%s", sieveGetLastError(nullptr));
    sieveResult_t res;
    RANK_CHECK(CheckedAllReduce(comm, rank, nranks, 1001, &res) == 0, "warm-up");
    board->started.fetch_add(1);
    RANK_CHECK(WaitFor([&] { return board->event_s.load() != 0; }, 50), "no partition");
    const double cut = board->event_s.load();
    RANK_CHECK(cut > 0, "the partition was not made");
    CheckedAllReduce(comm, rank, nranks, kCount, &res);
    const double detect = NowS() - cut;
    std::fprintf(stderr, "rank %d (host %d): failed %.3f s after the partition: %s\n", rank,
                 TwoHosts::HostOf(rank), detect, sieveGetLastError(comm));
    RANK_CHECK(res != sieveSuccess, "succeeded across a partition");
    EXPECT_LE(detect, kPartitionTimeoutS + 2) << "the partition was found too late";
    const std::vector<int> other_host =
        TwoHosts::HostOf(rank) == 0 ? std::vector<int>{2, 3} : std::vector<int>{0, 1};
    if (ShrinkAway(comm, rank, other_host, cut) != 0) return 1;
    board->rejoined.fetch_add(1);
    return 0;
  });
  EXPECT_EQ(failures, "");
  EXPECT_EQ(board->rejoined.load(), kRanks);
}

}  // namespace
}  // namespace sieve_test
