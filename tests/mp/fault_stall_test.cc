// Stalls: a rank frozen (SIGSTOP) mid all-reduce makes the survivors fail
// within SIEVE_TIMEOUT + 2 s, and the frozen rank fails too once resumed; a
// transfer that is slow but keeps moving (every data send held back by
// SIEVE_FAULT) takes longer than SIEVE_TIMEOUT and still completes exactly.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

#include "support/fault_support.h"
#include "support/mp_harness.h"

namespace sieve_test {
namespace {

constexpr double kTimeoutS = 2;  // SIEVE_TIMEOUT of these tests

TEST(FaultStallTest, FrozenRankIsFoundAndFailsTooWhenResumed) {
  const int kRanks = 3, kVictim = 1;
  SharedFaultBoard board;
  RankSpec spec;
  spec.nranks = kRanks;
  spec.kill_after_s = 60;
  spec.env = {{"SIEVE_TIMEOUT", "2"},
              {"SIEVE_FAULT", "rank=1,on=send,min=65536,nth=5,do=stop"}};
  std::string failures;
  {
    spec.watch = VictimWatch(board.get(), kRanks, kVictim, /*stopped=*/true, kRanks - 1);
    failures = RunRanks(spec, [&](int rank, int nranks, const sieveUniqueId& id) {
      board->pid[rank].store(getpid());
      sieveComm_t comm = nullptr;
      RANK_CHECK(sieveCommInitRank(&comm, nranks, id, rank) == sieveSuccess, "%s",
                 sieveGetLastError(nullptr));
      sieveResult_t res;
      RANK_CHECK(CheckedAllReduce(comm, rank, nranks, 1001, &res) == 0, "warm-up");
      CheckedAllReduce(comm, rank, nranks, size_t{4} << 20, &res);  // rank 1 stops inside
      double returned = NowS();
      std::string msg = sieveGetLastError(comm);
      RANK_CHECK(res != sieveSuccess, "the all-reduce succeeded with rank 1 frozen");
      EXPECT_EQ(res, sieveRemoteError) << msg;
      if (rank == kVictim) {
        double after_cont = returned - board->cont_s.load();
        std::fprintf(stderr, "rank 1 (resumed): failed %.3f s after SIGCONT: %s\n", after_cont,
                     msg.c_str());
        EXPECT_GT(board->cont_s.load(), 0) << "returned before being resumed";
        EXPECT_LE(after_cont, kTimeoutS + 2) << "the resumed rank did not fail promptly";
      } else {
        double detect = returned - board->event_s.load();
        std::fprintf(stderr, "rank %d: failed %.3f s after rank 1 stopped: %s\n", rank, detect,
                     msg.c_str());
        EXPECT_GT(board->event_s.load(), 0);
        EXPECT_LE(detect, kTimeoutS + 2) << "the frozen rank was found too late";
        EXPECT_GE(detect, kTimeoutS * 0.5) << "failed long before SIEVE_TIMEOUT: " << msg;
        board->reported.fetch_add(1);  // the watcher resumes rank 1 after both reports
      }
      auto start = Clock::now();
      EXPECT_EQ(sieveCommAbort(comm), sieveSuccess);
      EXPECT_LT(SecondsSince(start), 5.0);
      return 0;
    });
  }
  EXPECT_EQ(failures, "");
}

TEST(FaultStallTest, SlowButProgressingTransferOutlastsTheTimeout) {
  // Every data send of every rank waits 300 ms: 6 ring steps take ~2 s in all,
  // twice SIEVE_TIMEOUT, yet the gaps between completions stay well under it.
  RankSpec spec;
  spec.nranks = 4;
  spec.kill_after_s = 60;
  spec.env = {{"SIEVE_TIMEOUT", "1"},
              {"SIEVE_FAULT", "on=send,min=65536,count=0,do=delay,ms=300"}};
  std::string failures = RunRanks(spec, [&](int rank, int nranks, const sieveUniqueId& id) {
    sieveComm_t comm = nullptr;
    RANK_CHECK(sieveCommInitRank(&comm, nranks, id, rank) == sieveSuccess, "%s",
               sieveGetLastError(nullptr));
    auto start = Clock::now();
    sieveResult_t res;
    long wrong = CheckedAllReduce(comm, rank, nranks, (size_t{1} << 20) + 5, &res);
    double took = SecondsSince(start);
    std::fprintf(stderr, "rank %d: slow all-reduce returned %d after %.2f s (%ld wrong): %s\n",
                 rank, int(res), took, wrong, res == sieveSuccess ? "" : sieveGetLastError(comm));
    EXPECT_EQ(res, sieveSuccess);
    EXPECT_EQ(wrong, 0);
    EXPECT_GT(took, 1.0) << "the transfer was not slower than SIEVE_TIMEOUT: nothing was shown";
    EXPECT_EQ(sieveCommDestroy(comm), sieveSuccess);
    return 0;
  });
  EXPECT_EQ(failures, "");
}

}  // namespace
}  // namespace sieve_test
