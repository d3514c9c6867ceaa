// The PyTorch watchdog pattern, in real processes with real threads (these
// tests also run under ThreadSanitizer, scripts/test.sh):
//  - a thread polling sieveCommGetAsyncError while collectives run never
//    waits (p99 < 1 ms) and sees the failure once a peer dies;
//  - sieveCommAbort from a second thread unblocks a collective blocked in the
//    first while a third thread polls, and returns within 5 s;
//  - sieveCommDestroy with a collective in flight in another thread returns.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "support/fault_support.h"
#include "support/mp_harness.h"

namespace sieve_test {
namespace {

RankSpec Spec(int nranks, const char* timeout) {
  RankSpec spec;
  spec.nranks = nranks;
  spec.kill_after_s = 60;
  spec.env = {{"SIEVE_TIMEOUT", timeout}};
  return spec;
}

TEST(AbortAsyncTest, PollingGetAsyncErrorNeverBlocksAndSeesAPeerDeath) {
  SharedFaultBoard board;
  std::string failures = RunRanks(Spec(3, "20"), [&](int rank, int nranks, const sieveUniqueId& id) {
    sieveComm_t comm = nullptr;
    RANK_CHECK(sieveCommInitRank(&comm, nranks, id, rank) == sieveSuccess, "%s",
               sieveGetLastError(nullptr));
    std::vector<float> data(size_t{1} << 20, 1.0f);
    if (rank == 2) {  // takes part in 10 all-reduces, then dies in the 11th
      for (int i = 0; i < 10; ++i)
        RANK_CHECK(sieveAllReduce(data.data(), data.data(), data.size(), sieveFloat32, sieveSum,
                                  comm, nullptr) == sieveSuccess, "%s", sieveGetLastError(comm));
      std::fflush(nullptr);
      _exit(0);
    }
    std::atomic<bool> stop{false};
    std::vector<double> call_s;
    std::atomic<double> failure_seen{0};
    std::thread poller([&] {
      call_s.reserve(1 << 16);
      while (!stop.load()) {
        sieveResult_t async = sieveSuccess;
        auto t0 = Clock::now();
        sieveResult_t res = sieveCommGetAsyncError(comm, &async);
        call_s.push_back(SecondsSince(t0));
        if (res != sieveSuccess) break;
        if (async != sieveSuccess && failure_seen.load() == 0) failure_seen.store(NowS());
        std::this_thread::sleep_for(std::chrono::microseconds(50));
      }
    });
    int ok = 0;
    sieveResult_t res = sieveSuccess;
    for (int i = 0; i < 11 && res == sieveSuccess; ++i) {
      res = sieveAllReduce(data.data(), data.data(), data.size(), sieveFloat32, sieveSum, comm,
                           nullptr);
      ok += res == sieveSuccess;
    }
    double returned = NowS();
    WaitFor([&] { return failure_seen.load() != 0; }, 2);
    stop.store(true);
    poller.join();
    std::vector<double> sorted = call_s;
    std::sort(sorted.begin(), sorted.end());
    double p50 = sorted.empty() ? 0 : sorted[sorted.size() / 2];
    double p99 = sorted.empty() ? 0 : sorted[sorted.size() * 99 / 100];
    double worst = sorted.empty() ? 0 : sorted.back();
    std::fprintf(stderr,
                 "rank %d: %d all-reduces ok; GetAsyncError x%zu: p50 %.1f us, p99 %.1f us, max "
                 "%.1f us; failure seen by the poller %.3f s after the call returned\n",
                 rank, ok, sorted.size(), p50 * 1e6, p99 * 1e6, worst * 1e6,
                 failure_seen.load() - returned);
    EXPECT_EQ(ok, 10);
    EXPECT_NE(res, sieveSuccess) << "the all-reduce without rank 2 succeeded";
    EXPECT_GT(sorted.size(), 100u) << "the poller hardly ran";
    EXPECT_LT(p99, 1e-3) << "sieveCommGetAsyncError blocked";
    EXPECT_NE(failure_seen.load(), 0) << "the poller never saw the async error";
    EXPECT_EQ(sieveCommAbort(comm), sieveSuccess);
    return 0;
  });
  EXPECT_EQ(failures, "");
}

// Rank 1 never joins the collective; rank 0 blocks in it until a second
// thread ends the communicator with `end` (abort or destroy) while a third polls.
void BlockedCallIsEnded(sieveResult_t (*end)(sieveComm_t), const char* what) {
  std::string failures = RunRanks(Spec(2, "30"), [&](int rank, int nranks,
                                                    const sieveUniqueId& id) {
    sieveComm_t comm = nullptr;
    RANK_CHECK(sieveCommInitRank(&comm, nranks, id, rank) == sieveSuccess, "%s",
               sieveGetLastError(nullptr));
    if (rank == 1) {
      std::this_thread::sleep_for(std::chrono::seconds(2));
      EXPECT_EQ(sieveCommDestroy(comm), sieveSuccess);
      return 0;
    }
    std::atomic<bool> ending{false};
    std::atomic<long> polls{0};
    std::thread poller([&] {
      while (!ending.load()) {  // the watchdog stops polling before it ends the comm
        sieveResult_t async = sieveSuccess;
        EXPECT_EQ(sieveCommGetAsyncError(comm, &async), sieveSuccess);
        polls.fetch_add(1);
        std::this_thread::sleep_for(std::chrono::microseconds(100));
      }
    });
    std::atomic<double> end_start{0}, end_done{0};
    std::thread ender([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      ending.store(true);
      poller.join();
      end_start.store(NowS());
      EXPECT_EQ(end(comm), sieveSuccess);
      end_done.store(NowS());
    });
    std::vector<float> data(1 << 16, 1.0f);
    sieveResult_t res = sieveAllReduce(data.data(), data.data(), data.size(), sieveFloat32,
                                       sieveSum, comm, nullptr);
    double returned = NowS();
    std::string msg = sieveGetLastError(nullptr);  // the comm may be gone: the thread's copy
    ender.join();
    double after = returned - end_start.load(), took = end_done.load() - end_start.load();
    std::fprintf(stderr, "rank 0: %s: blocked all-reduce returned %d %.3f s after it began (it "
                 "took %.3f s; %ld polls): %s\n", what, int(res), after, took, polls.load(),
                 msg.c_str());
    EXPECT_NE(res, sieveSuccess);
    EXPECT_LT(after, 1.0) << "the blocked call did not return promptly";
    EXPECT_LT(took, 5.0) << what << " took too long";
    EXPECT_GT(polls.load(), 10);
    return 0;
  });
  EXPECT_EQ(failures, "");
}

TEST(AbortAsyncTest, AbortFromSecondThreadWhileThirdPolls) {
  BlockedCallIsEnded(sieveCommAbort, "abort");
}

TEST(AbortAsyncTest, DestroyWithWorkInFlightReturns) {
  BlockedCallIsEnded(sieveCommDestroy, "destroy");
}

}  // namespace
}  // namespace sieve_test
