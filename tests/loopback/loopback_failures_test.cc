// Failures with ranks as threads over the loopback transport, as the
// multi-process tests see them over UCX: a rank that aborts its communicator
// fails its peers' collective naming it (no hang), a rank that never joins
// the collective makes its peers time out after SIEVE_TIMEOUT naming it, and
// ranks that call with different counts all fail.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "support/mp_harness.h"
#include "support/thread_ranks.h"

namespace sieve_test {
namespace {

// How many ranks are done with their part (the ranks are threads of this test).
std::atomic<int> g_left{0};

int AbortedRankFailsItsPeers(int rank, int n, const sieveUniqueId& id) {
  sieveComm_t comm = nullptr;
  RANK_CHECK(InitComm(rank, n, id, &comm) == 0, "%s", sieveGetLastError(nullptr));
  if (rank == 2) {
    RANK_CHECK(sieveCommAbort(comm) == sieveSuccess, "abort");
    g_left.store(1);
    return 0;
  }
  std::vector<float> buf(100003, 1.0f);
  // Before or after the abort: either way the call fails, naming rank 2.
  sieveResult_t res = sieveAllReduce(buf.data(), buf.data(), buf.size(), sieveFloat32, sieveSum,
                                     comm, nullptr);
  const std::string error = sieveGetLastError(comm);
  RANK_CHECK(res == sieveRemoteError, "result %d: %s", res, error.c_str());
  RANK_CHECK(error.find("rank 2") != std::string::npos &&
                 error.find("its communicator was") != std::string::npos,
             "the error does not name the aborted rank: %s", error.c_str());
  while (g_left.load() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  RANK_CHECK(sieveCommAbort(comm) == sieveSuccess, "abort");
  return 0;
}

TEST(LoopbackFailuresTest, AnAbortedRankFailsItsPeersNamingIt) {
  RankSpec spec;
  spec.nranks = 3;
  spec.kill_after_s = 60;
  spec.env = {{"SIEVE_TIMEOUT", "20"}};
  g_left.store(0);
  EXPECT_EQ(RunThreadRanks(spec, AbortedRankFailsItsPeers), "");
}

int SilentRankTimesOut(int rank, int n, const sieveUniqueId& id) {
  sieveComm_t comm = nullptr;
  RANK_CHECK(InitComm(rank, n, id, &comm) == 0, "%s", sieveGetLastError(nullptr));
  if (rank != 2) {
    std::vector<double> buf(777, 1.0);
    const auto start = std::chrono::steady_clock::now();
    sieveResult_t res = sieveAllReduce(buf.data(), buf.data(), buf.size(), sieveFloat64, sieveSum,
                                       comm, nullptr);
    const double took =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const std::string error = sieveGetLastError(comm);
    RANK_CHECK(res == sieveRemoteError, "result %d: %s", res, error.c_str());
    RANK_CHECK(error.find("no progress for") != std::string::npos &&
                   error.find("rank 2") != std::string::npos,
               "the timeout does not name the silent rank: %s", error.c_str());
    RANK_CHECK(took > 0.9 && took < 15, "timed out after %.1f s (SIEVE_TIMEOUT=1)", took);
    g_left.fetch_add(1);
  } else {
    while (g_left.load() < n - 1) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  RANK_CHECK(sieveCommAbort(comm) == sieveSuccess, "abort");
  return 0;
}

TEST(LoopbackFailuresTest, ASilentRankMakesItsPeersTimeOutNamingIt) {
  RankSpec spec;
  spec.nranks = 3;
  spec.kill_after_s = 60;
  spec.env = {{"SIEVE_TIMEOUT", "1"}};
  g_left.store(0);
  EXPECT_EQ(RunThreadRanks(spec, SilentRankTimesOut), "");
}

int DifferentCountsFailEveryRank(int rank, int n, const sieveUniqueId& id) {
  sieveComm_t comm = nullptr;
  RANK_CHECK(InitComm(rank, n, id, &comm) == 0, "%s", sieveGetLastError(nullptr));
  std::vector<int32_t> buf(1001 + (rank == 1 ? 2 : 0), 1);
  sieveResult_t res =
      sieveAllReduce(buf.data(), buf.data(), buf.size(), sieveInt32, sieveSum, comm, nullptr);
  RANK_CHECK(res != sieveSuccess, "rank %d: an all-reduce with different counts succeeded", rank);
  RANK_CHECK(sieveCommAbort(comm) == sieveSuccess, "abort");
  return 0;
}

TEST(LoopbackFailuresTest, DifferentCountsFailEveryRank) {
  RankSpec spec;
  spec.nranks = 3;
  spec.kill_after_s = 60;
  spec.env = {{"SIEVE_TIMEOUT", "20"}};
  EXPECT_EQ(RunThreadRanks(spec, DifferentCountsFailEveryRank), "");
}

}  // namespace
}  // namespace sieve_test
