// Non-blocking communicators (sieveConfig_t.blocking = 0) in real processes, with real threads
// (these tests also run under ThreadSanitizer, scripts/test.sh):
//  - init returns sieveInProgress with a handle, polling ends in sieveSuccess; a sequence of
//    all-reduces (call -> InProgress -> poll) of random odd-sized data, several datatypes and
//    ops, matches the reference; so do a group and a non-blocking split;
//  - a call made while the communicator is in progress gets sieveInvalidUsage and queues
//    nothing, while Count/UserRank/GetLastError answer;
//  - init with a missing rank: the poll ends in an error within SIEVE_TIMEOUT;
//  - sieveCommAbort from another thread, with work queued or an init pending, returns in 5 s;
//  - sieveCommWaitAsyncError sleeps (little CPU) until the operation ends, or its timeout;
//    an abort from another thread ends the wait;
//  - a bad config is sieveInvalidArgument naming what is wrong.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <time.h>

#include "support/fault_support.h"
#include "support/mp_harness.h"
#include "support/reference.h"

namespace sieve_test {
namespace {

RankSpec Spec(int nranks, const char* timeout) {
  RankSpec spec;
  spec.nranks = nranks;
  spec.kill_after_s = 90;
  spec.env = {{"SIEVE_TIMEOUT", timeout}};
  return spec;
}

sieveConfig_t NonBlocking() {
  sieveConfig_t config = SIEVE_CONFIG_INITIALIZER;
  config.blocking = 0;
  config.commName = "nonblocking-test";
  return config;
}

// Polls until comm leaves sieveInProgress (or limit_s passes: then sieveInProgress).
sieveResult_t Poll(sieveComm_t comm, double limit_s = 60) {
  sieveResult_t async = sieveInProgress;
  auto start = Clock::now();
  while (SecondsSince(start) < limit_s) {
    if (sieveCommGetAsyncError(comm, &async) != sieveSuccess) return sieveInternalError;
    if (async != sieveInProgress) return async;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  return sieveInProgress;
}

bool Mentions(const char* message, const char* what) {
  return message != nullptr && std::string(message).find(what) != std::string::npos;
}

struct Case {
  sieveDataType_t dtype;
  sieveRedOp_t op;
  size_t count;
};

// Odd sizes drawn from the seed, every datatype family, every op.
std::vector<Case> Cases(uint64_t seed) {
  std::mt19937_64 rng(seed);
  const sieveDataType_t dtypes[] = {sieveFloat32, sieveInt32,   sieveFloat64,
                                    sieveInt64,   sieveFloat16, sieveBfloat16, sieveUint8};
  const sieveRedOp_t ops[] = {sieveSum, sieveMax, sieveProd, sieveMin, sieveAvg};
  std::vector<Case> cases;
  for (size_t i = 0; i < 7; ++i)
    cases.push_back({dtypes[i], ops[i % 5], (rng() % 40000) | 1});
  return cases;
}

// One all-reduce as the contract asks: call -> InProgress -> poll -> compare with the reference.
int AllReduceAndCheck(sieveComm_t comm, int rank, int nranks, uint64_t seed, const Case& c) {
  const size_t esize = TypeSize(c.dtype);
  std::vector<char> send(c.count * esize), recv(c.count * esize, 0x5a), expected(c.count * esize);
  FillInput(seed, rank, c.dtype, c.op, 0, c.count, send.data());
  ExpectedReduction(seed, nranks, c.dtype, c.op, 0, c.count, expected.data());
  sieveResult_t r =
      sieveAllReduce(send.data(), recv.data(), c.count, c.dtype, c.op, comm, nullptr);
  RANK_CHECK(r == sieveInProgress, "%s %s: returned %d: %s", TypeName(c.dtype), OpName(c.op), r,
             sieveGetLastError(comm));
  RANK_CHECK(Poll(comm) == sieveSuccess, "%s %s: %s", TypeName(c.dtype), OpName(c.op),
             sieveGetLastError(comm));
  size_t first = 0;
  size_t wrong = CountMismatches(recv.data(), expected.data(), c.count, esize, &first);
  RANK_CHECK(wrong == 0, "%s %s count %zu: %zu wrong elements, first at %zu", TypeName(c.dtype),
             OpName(c.op), c.count, wrong, first);
  return 0;
}

uint64_t FreshSeed() { return std::random_device{}() * 0x9e3779b97f4a7c15ull + 1; }

TEST(NonBlockingTest, InitPollAndAllReducesMatchTheReference) {
  const uint64_t seed = FreshSeed();
  std::fprintf(stderr, "seed %llu\n", static_cast<unsigned long long>(seed));
  std::string failures = RunRanks(Spec(3, "30"), [&](int rank, int nranks, const sieveUniqueId& id) {
    sieveComm_t comm = nullptr;
    sieveConfig_t config = NonBlocking();
    sieveResult_t r = sieveCommInitRankConfig(&comm, nranks, id, rank, &config);
    RANK_CHECK(r == sieveInProgress && comm != nullptr, "init returned %d: %s", r,
               sieveGetLastError(nullptr));
    // Known at once while the init runs.
    int count = -1, me = -1;
    RANK_CHECK(sieveCommCount(comm, &count) == sieveSuccess && count == nranks, "count %d", count);
    RANK_CHECK(sieveCommUserRank(comm, &me) == sieveSuccess && me == rank, "rank %d", me);
    RANK_CHECK(Poll(comm) == sieveSuccess, "init: %s", sieveGetLastError(comm));
    for (const Case& c : Cases(seed))
      if (AllReduceAndCheck(comm, rank, nranks, seed, c) != 0) return 1;

    // A group: an all-reduce and a broadcast, issued together in the background.
    const size_t n = 1001;
    std::vector<int64_t> in(n), sum(n, -1), bcast(n, -1), expected(n);
    FillInput(seed + 1, rank, sieveInt64, sieveSum, 0, n, in.data());
    ExpectedReduction(seed + 1, nranks, sieveInt64, sieveSum, 0, n, expected.data());
    RANK_CHECK(sieveGroupStart() == sieveSuccess, "group start");
    RANK_CHECK(sieveAllReduce(in.data(), sum.data(), n, sieveInt64, sieveSum, comm, nullptr) ==
                   sieveSuccess, "grouped all-reduce: %s", sieveGetLastError(comm));
    RANK_CHECK(sieveBroadcast(in.data(), bcast.data(), n, sieveInt64, 1, comm, nullptr) ==
                   sieveSuccess, "grouped broadcast: %s", sieveGetLastError(comm));
    r = sieveGroupEnd();
    RANK_CHECK(r == sieveInProgress, "group end returned %d: %s", r, sieveGetLastError(nullptr));
    RANK_CHECK(Poll(comm) == sieveSuccess, "group: %s", sieveGetLastError(comm));
    RANK_CHECK(sum == expected, "grouped all-reduce differs from the reference");
    std::vector<int64_t> root(n);
    FillInput(seed + 1, 1, sieveInt64, sieveSum, 0, n, root.data());
    RANK_CHECK(bcast == root, "grouped broadcast differs from rank 1's input");

    // Send/recv around the ring.
    std::vector<float> mine(333), from_left(333, -1), left(333);
    FillInput(seed + 2, rank, sieveFloat32, sieveSum, 0, mine.size(), mine.data());
    FillInput(seed + 2, (rank + nranks - 1) % nranks, sieveFloat32, sieveSum, 0, left.size(),
              left.data());
    RANK_CHECK(sieveGroupStart() == sieveSuccess, "group start");
    (void)sieveSend(mine.data(), mine.size(), sieveFloat32, (rank + 1) % nranks, comm, nullptr);
    (void)sieveRecv(from_left.data(), from_left.size(), sieveFloat32, (rank + nranks - 1) % nranks,
                    comm, nullptr);
    RANK_CHECK(sieveGroupEnd() == sieveInProgress, "%s", sieveGetLastError(nullptr));
    RANK_CHECK(Poll(comm) == sieveSuccess, "ring: %s", sieveGetLastError(comm));
    RANK_CHECK(from_left == left, "received block differs from the left neighbour's");
    RANK_CHECK(sieveCommDestroy(comm) == sieveSuccess, "destroy");
    return 0;
  });
  EXPECT_EQ(failures, "") << "seed " << seed;
}

// Rank 1 holds back its all-reduce until rank 0 has checked that calls made while its own is
// pending are refused (so rank 0's is certainly still in progress).
TEST(NonBlockingTest, CallsWhileInProgressAreInvalidUsage) {
  SharedFaultBoard board;
  board->started.store(0);
  std::string failures = RunRanks(Spec(2, "30"), [&](int rank, int nranks, const sieveUniqueId& id) {
    sieveComm_t comm = nullptr;
    sieveConfig_t config = NonBlocking();
    // Rank 1 joins only after rank 0 has checked: rank 0's init cannot have finished.
    if (rank == 1)
      RANK_CHECK(WaitFor([&] { return board->started.load() == 1; }, 60), "rank 0 never checked");
    RANK_CHECK(sieveCommInitRankConfig(&comm, nranks, id, rank, &config) == sieveInProgress, "%s",
               sieveGetLastError(nullptr));
    // Before the init is done the communicator refuses work too.
    std::vector<double> a(777), b(777);
    for (size_t i = 0; i < a.size(); ++i) a[i] = rank * 1000.0 + static_cast<double>(i);
    if (rank == 0) {
      sieveResult_t r = sieveAllReduce(a.data(), b.data(), a.size(), sieveDouble, sieveSum, comm,
                                       nullptr);
      RANK_CHECK(r == sieveInvalidUsage, "all-reduce during init returned %d", r);
      RANK_CHECK(Mentions(sieveGetLastError(nullptr), "sieveCommGetAsyncError"), "message: %s",
                 sieveGetLastError(nullptr));
      board->started.store(1);
    }
    RANK_CHECK(Poll(comm) == sieveSuccess, "init: %s", sieveGetLastError(comm));
    if (rank == 1) {
      RANK_CHECK(WaitFor([&] { return board->started.load() == 2; }, 60), "rank 0 never checked");
    }
    sieveResult_t r =
        sieveAllReduce(a.data(), b.data(), a.size(), sieveDouble, sieveSum, comm, nullptr);
    RANK_CHECK(r == sieveInProgress, "all-reduce returned %d: %s", r, sieveGetLastError(comm));
    if (rank == 0) {
      sieveResult_t async = sieveSuccess;
      RANK_CHECK(sieveCommGetAsyncError(comm, &async) == sieveSuccess && async == sieveInProgress,
                 "async %d", async);
      RANK_CHECK(sieveAllReduce(a.data(), b.data(), a.size(), sieveDouble, sieveSum, comm,
                                nullptr) == sieveInvalidUsage, "second all-reduce accepted");
      RANK_CHECK(Mentions(sieveGetLastError(nullptr), "in progress"), "message: %s",
                 sieveGetLastError(nullptr));
      RANK_CHECK(sieveBroadcast(a.data(), b.data(), a.size(), sieveDouble, 0, comm, nullptr) ==
                     sieveInvalidUsage, "broadcast accepted");
      sieveComm_t sub = nullptr;
      RANK_CHECK(sieveCommSplit(comm, 0, 0, &sub) == sieveInvalidUsage && sub == nullptr,
                 "split accepted");
      sieveCounters_t counters;
      RANK_CHECK(sieveCommGetCounters(comm, &counters) == sieveInvalidUsage, "counters read");
      RANK_CHECK(sieveGroupStart() == sieveSuccess, "group start");
      RANK_CHECK(sieveAllReduce(a.data(), b.data(), a.size(), sieveDouble, sieveSum, comm,
                                nullptr) == sieveInvalidUsage, "grouped all-reduce accepted");
      // A refused call fails its group (sieve.h): the group end says so and runs nothing.
      RANK_CHECK(sieveGroupEnd() == sieveInvalidUsage, "group end after a refused call");
      RANK_CHECK(Mentions(sieveGetLastError(nullptr), "none of the group's calls"), "message: %s",
                 sieveGetLastError(nullptr));
      int count = 0, me = -1;
      RANK_CHECK(sieveCommCount(comm, &count) == sieveSuccess && count == 2, "count");
      RANK_CHECK(sieveCommUserRank(comm, &me) == sieveSuccess && me == 0, "rank");
      (void)sieveGetLastError(comm);
      RANK_CHECK(sieveCommGetAsyncError(comm, &async) == sieveSuccess && async == sieveInProgress,
                 "async %d after the refused calls", async);
      board->started.store(2);
    }
    RANK_CHECK(Poll(comm) == sieveSuccess, "all-reduce: %s", sieveGetLastError(comm));
    for (size_t i = 0; i < b.size(); ++i)
      RANK_CHECK(b[i] == 1000.0 + 2.0 * static_cast<double>(i), "element %zu is %g", i, b[i]);
    // Nothing refused was queued: the next all-reduce pairs with the peer's next one.
    r = sieveAllReduce(b.data(), a.data(), b.size(), sieveDouble, sieveMax, comm, nullptr);
    RANK_CHECK(r == sieveInProgress && Poll(comm) == sieveSuccess, "%s", sieveGetLastError(comm));
    RANK_CHECK(a == b, "max of equal inputs differs");
    RANK_CHECK(sieveCommDestroy(comm) == sieveSuccess, "destroy");
    return 0;
  });
  EXPECT_EQ(failures, "");
}

TEST(NonBlockingTest, SplitInTheBackgroundReducesAmongItsColor) {
  std::string failures = RunRanks(Spec(4, "30"), [&](int rank, int nranks, const sieveUniqueId& id) {
    sieveComm_t parent = nullptr;
    sieveConfig_t config = NonBlocking();
    RANK_CHECK(sieveCommInitRankConfig(&parent, nranks, id, rank, &config) == sieveInProgress,
               "%s", sieveGetLastError(nullptr));
    RANK_CHECK(Poll(parent) == sieveSuccess, "init: %s", sieveGetLastError(parent));
    sieveComm_t sub = nullptr;
    // No config: the new communicator inherits non-blocking from the parent.
    sieveResult_t r = sieveCommSplit(parent, rank % 2, -rank, &sub);
    RANK_CHECK(r == sieveInProgress && sub != nullptr, "split returned %d: %s", r,
               sieveGetLastError(parent));
    RANK_CHECK(Poll(sub) == sieveSuccess, "split: %s", sieveGetLastError(sub));
    RANK_CHECK(Poll(parent) == sieveSuccess, "parent: %s", sieveGetLastError(parent));
    int size = 0, me = -1;
    RANK_CHECK(sieveCommCount(sub, &size) == sieveSuccess && size == 2, "size %d", size);
    // Keys -rank: the higher parent rank comes first.
    RANK_CHECK(sieveCommUserRank(sub, &me) == sieveSuccess && me == (rank < 2 ? 1 : 0), "rank %d",
               me);
    std::vector<double> x(555), y(555, -1);
    for (size_t i = 0; i < x.size(); ++i) x[i] = (rank + 1) * static_cast<double>(i + 1);
    RANK_CHECK(sieveAllReduce(x.data(), y.data(), x.size(), sieveDouble, sieveSum, sub, nullptr) ==
                   sieveInProgress, "%s", sieveGetLastError(sub));
    RANK_CHECK(Poll(sub) == sieveSuccess, "%s", sieveGetLastError(sub));
    const double ranks_sum = rank % 2 == 0 ? 1 + 3 : 2 + 4;  // (r + 1) over the color
    for (size_t i = 0; i < y.size(); ++i)
      RANK_CHECK(y[i] == ranks_sum * static_cast<double>(i + 1), "element %zu is %g", i, y[i]);
    // A blocking split of the non-blocking parent is ready on return.
    sieveConfig_t blocking = SIEVE_CONFIG_INITIALIZER;
    blocking.blocking = 1;
    sieveComm_t whole = nullptr;
    RANK_CHECK(sieveCommSplitConfig(parent, 0, rank, &whole, &blocking) == sieveSuccess, "%s",
               sieveGetLastError(parent));
    RANK_CHECK(sieveAllReduce(x.data(), y.data(), x.size(), sieveDouble, sieveSum, whole,
                              nullptr) == sieveSuccess, "%s", sieveGetLastError(whole));
    for (size_t i = 0; i < y.size(); ++i)
      RANK_CHECK(y[i] == 10.0 * static_cast<double>(i + 1), "element %zu is %g", i, y[i]);
    RANK_CHECK(sieveCommDestroy(whole) == sieveSuccess, "destroy");
    RANK_CHECK(sieveCommDestroy(sub) == sieveSuccess, "destroy");
    RANK_CHECK(sieveCommDestroy(parent) == sieveSuccess, "destroy");
    return 0;
  });
  EXPECT_EQ(failures, "");
}

TEST(NonBlockingTest, MissingRankEndsThePollInAnErrorWithinTheTimeout) {
  RankSpec spec = Spec(3, "5");
  spec.absent = {2};
  std::string failures = RunRanks(spec, [&](int rank, int nranks, const sieveUniqueId& id) {
    sieveComm_t comm = nullptr;
    sieveConfig_t config = NonBlocking();
    auto start = Clock::now();
    sieveResult_t r = sieveCommInitRankConfig(&comm, nranks, id, rank, &config);
    double returned_s = SecondsSince(start);
    RANK_CHECK(r == sieveInProgress && comm != nullptr, "init returned %d", r);
    // Well before SIEVE_TIMEOUT: the call did not wait for the missing rank.
    RANK_CHECK(returned_s < 2.5, "init took %.2f s to return", returned_s);
    sieveResult_t async = Poll(comm, 30);
    double failed_s = SecondsSince(start);
    RANK_CHECK(async != sieveSuccess && async != sieveInProgress, "poll ended in %d", async);
    // SIEVE_TIMEOUT=5 plus the bootstrap's grace; generous for a loaded machine.
    RANK_CHECK(failed_s < 20.0, "the error came after %.1f s", failed_s);
    std::string message = sieveGetLastError(comm);
    RANK_CHECK(NamesRank(message, 2), "message does not name rank 2: %s", message.c_str());
    std::fprintf(stderr, "rank %d: init returned in %.3f s, failed after %.1f s: %s\n", rank,
                 returned_s, failed_s, message.c_str());
    float x = 1;
    RANK_CHECK(sieveAllReduce(&x, &x, 1, sieveFloat, sieveSum, comm, nullptr) == sieveInvalidUsage,
               "all-reduce on a failed communicator accepted");
    RANK_CHECK(Mentions(sieveGetLastError(nullptr), "could not be created"), "%s",
               sieveGetLastError(nullptr));
    RANK_CHECK(sieveCommDestroy(comm) == sieveSuccess, "destroy");
    return 0;
  });
  EXPECT_EQ(failures, "");
}

// Rank 0 queues an all-reduce rank 1 never joins; another thread aborts while it is pending.
TEST(NonBlockingTest, AbortFromAnotherThreadStopsQueuedWork) {
  SharedFaultBoard board;
  board->started.store(0);
  std::string failures = RunRanks(Spec(2, "60"), [&](int rank, int nranks, const sieveUniqueId& id) {
    sieveComm_t comm = nullptr;
    sieveConfig_t config = NonBlocking();
    RANK_CHECK(sieveCommInitRankConfig(&comm, nranks, id, rank, &config) == sieveInProgress, "%s",
               sieveGetLastError(nullptr));
    RANK_CHECK(Poll(comm) == sieveSuccess, "init: %s", sieveGetLastError(comm));
    if (rank == 1) {  // stays alive, silent, until rank 0 is done
      WaitFor([&] { return board->started.load() == 1; }, 60);
      RANK_CHECK(sieveCommDestroy(comm) == sieveSuccess, "destroy");
      return 0;
    }
    std::vector<float> data(100003, 1.0f);
    RANK_CHECK(sieveAllReduce(data.data(), data.data(), data.size(), sieveFloat, sieveSum, comm,
                              nullptr) == sieveInProgress, "%s", sieveGetLastError(comm));
    std::atomic<double> abort_s{-1};
    std::thread aborter([&] {
      sieveResult_t async = sieveSuccess;
      for (int i = 0; i < 20; ++i) {  // the watchdog's view: pending
        if (sieveCommGetAsyncError(comm, &async) != sieveSuccess || async != sieveInProgress)
          return;
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
      auto start = Clock::now();
      if (sieveCommAbort(comm) == sieveSuccess) abort_s.store(SecondsSince(start));
    });
    aborter.join();
    board->started.store(1);
    std::fprintf(stderr, "rank 0: sieveCommAbort with an all-reduce pending took %.3f s\n",
                 abort_s.load());
    RANK_CHECK(abort_s.load() >= 0, "the all-reduce was not pending, or abort failed");
    RANK_CHECK(abort_s.load() <= 5.0, "abort took %.2f s", abort_s.load());
    return 0;
  });
  EXPECT_EQ(failures, "");
}

// An init that cannot complete (a rank is missing, SIEVE_TIMEOUT long) is aborted.
TEST(NonBlockingTest, AbortDuringAPendingInitReturnsPromptly) {
  RankSpec spec = Spec(2, "30");
  spec.absent = {1};
  std::string failures = RunRanks(spec, [&](int rank, int nranks, const sieveUniqueId& id) {
    sieveComm_t comm = nullptr;
    sieveConfig_t config = NonBlocking();
    RANK_CHECK(sieveCommInitRankConfig(&comm, nranks, id, rank, &config) == sieveInProgress, "%s",
               sieveGetLastError(nullptr));
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    sieveResult_t async = sieveSuccess;
    RANK_CHECK(sieveCommGetAsyncError(comm, &async) == sieveSuccess && async == sieveInProgress,
               "async %d", async);
    double abort_s = -1;
    std::thread aborter([&] {
      auto start = Clock::now();
      if (sieveCommAbort(comm) == sieveSuccess) abort_s = SecondsSince(start);
    });
    aborter.join();
    std::fprintf(stderr, "rank 0: sieveCommAbort during a pending init took %.3f s\n", abort_s);
    RANK_CHECK(abort_s >= 0 && abort_s <= 5.0, "abort took %.2f s", abort_s);
    return 0;
  });
  EXPECT_EQ(failures, "");
}

double ThreadCpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

// Rank 1 joins the all-reduce 0.6 s late; rank 0 waits for it with sieveCommWaitAsyncError.
TEST(NonBlockingTest, WaitAsyncErrorSleepsUntilTheOperationEnds) {
  std::string failures = RunRanks(Spec(2, "30"), [&](int rank, int nranks, const sieveUniqueId& id) {
    sieveComm_t comm = nullptr;
    sieveConfig_t config = NonBlocking();
    RANK_CHECK(sieveCommInitRankConfig(&comm, nranks, id, rank, &config) == sieveInProgress, "%s",
               sieveGetLastError(nullptr));
    sieveResult_t async = sieveInternalError;
    RANK_CHECK(sieveCommWaitAsyncError(comm, -1, &async) == sieveSuccess && async == sieveSuccess,
               "init: %d %s", async, sieveGetLastError(comm));
    std::vector<double> x(4097, rank + 1.0), y(4097, -1);
    if (rank == 1) std::this_thread::sleep_for(std::chrono::milliseconds(600));
    auto start = Clock::now();
    RANK_CHECK(sieveAllReduce(x.data(), y.data(), x.size(), sieveDouble, sieveSum, comm,
                              nullptr) == sieveInProgress, "%s", sieveGetLastError(comm));
    if (rank == 0) {  // a short limit passes while rank 1 is still away
      RANK_CHECK(sieveCommWaitAsyncError(comm, 100, &async) == sieveSuccess &&
                     async == sieveInProgress, "100 ms wait gave %d", async);
      RANK_CHECK(SecondsSince(start) >= 0.095, "returned after %.3f s", SecondsSince(start));
    }
    double cpu0 = ThreadCpuSeconds();
    RANK_CHECK(sieveCommWaitAsyncError(comm, -1, &async) == sieveSuccess && async == sieveSuccess,
               "all-reduce: %d %s", async, sieveGetLastError(comm));
    double cpu = ThreadCpuSeconds() - cpu0, wall = SecondsSince(start);
    for (double v : y) RANK_CHECK(v == 3.0, "sum is %g", v);
    if (rank == 0) {
      std::fprintf(stderr, "rank 0: waited %.3f s using %.4f s of CPU\n", wall, cpu);
      RANK_CHECK(wall >= 0.4, "the wait ended after %.3f s, before rank 1 joined", wall);
      RANK_CHECK(cpu < 0.1 * wall, "the waiting thread used %.3f s of CPU in %.3f s", cpu, wall);
    }
    RANK_CHECK(sieveCommDestroy(comm) == sieveSuccess, "destroy");
    return 0;
  });
  EXPECT_EQ(failures, "");
}

// Rank 0 waits for an all-reduce rank 1 never joins; another thread aborts the communicator.
TEST(NonBlockingTest, AbortEndsAWaitAsyncError) {
  SharedFaultBoard board;
  board->started.store(0);
  std::string failures = RunRanks(Spec(2, "60"), [&](int rank, int nranks, const sieveUniqueId& id) {
    sieveComm_t comm = nullptr;
    sieveConfig_t config = NonBlocking();
    RANK_CHECK(sieveCommInitRankConfig(&comm, nranks, id, rank, &config) == sieveInProgress, "%s",
               sieveGetLastError(nullptr));
    sieveResult_t async = sieveInternalError;
    RANK_CHECK(sieveCommWaitAsyncError(comm, -1, &async) == sieveSuccess && async == sieveSuccess,
               "init: %s", sieveGetLastError(comm));
    if (rank == 1) {  // stays alive, silent, until rank 0 is done
      WaitFor([&] { return board->started.load() == 1; }, 60);
      RANK_CHECK(sieveCommDestroy(comm) == sieveSuccess, "destroy");
      return 0;
    }
    std::vector<float> data(100003, 1.0f);
    RANK_CHECK(sieveAllReduce(data.data(), data.data(), data.size(), sieveFloat, sieveSum, comm,
                              nullptr) == sieveInProgress, "%s", sieveGetLastError(comm));
    std::thread aborter([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      (void)sieveCommAbort(comm);
    });
    auto start = Clock::now();
    sieveResult_t r = sieveCommWaitAsyncError(comm, -1, &async);
    double waited = SecondsSince(start);
    std::string message = sieveGetLastError(nullptr);
    aborter.join();
    board->started.store(1);
    std::fprintf(stderr, "rank 0: the abort ended the wait after %.3f s: %s\n", waited,
                 message.c_str());
    RANK_CHECK(r == sieveInvalidUsage, "the wait returned %d (async %d)", r, async);
    RANK_CHECK(Mentions(message.c_str(), "aborted"), "message: %s", message.c_str());
    RANK_CHECK(waited >= 0.25 && waited <= 5.5, "the wait ended after %.2f s", waited);
    return 0;
  });
  EXPECT_EQ(failures, "");
}

TEST(NonBlockingTest, BadConfigIsInvalidArgument) {
  sieveUniqueId id = {};  // never reached: the config is checked first
  sieveComm_t comm = nullptr;
  sieveConfig_t config = SIEVE_CONFIG_INITIALIZER;
  config.magic = 0x1234;
  EXPECT_EQ(sieveCommInitRankConfig(&comm, 2, id, 0, &config), sieveInvalidArgument);
  EXPECT_TRUE(Mentions(sieveGetLastError(nullptr), "magic")) << sieveGetLastError(nullptr);
  config = SIEVE_CONFIG_INITIALIZER;
  config.size = sizeof(config) - sizeof(const char*) - 1;
  EXPECT_EQ(sieveCommInitRankConfig(&comm, 2, id, 0, &config), sieveInvalidArgument);
  EXPECT_TRUE(Mentions(sieveGetLastError(nullptr), "size")) << sieveGetLastError(nullptr);
  config = SIEVE_CONFIG_INITIALIZER;
  config.version = 0;
  EXPECT_EQ(sieveCommInitRankConfig(&comm, 2, id, 0, &config), sieveInvalidArgument);
  EXPECT_TRUE(Mentions(sieveGetLastError(nullptr), "version")) << sieveGetLastError(nullptr);
  config = SIEVE_CONFIG_INITIALIZER;
  config.blocking = -5;
  EXPECT_EQ(sieveCommInitRankConfig(&comm, 2, id, 0, &config), sieveInvalidArgument);
  EXPECT_TRUE(Mentions(sieveGetLastError(nullptr), "blocking is -5")) << sieveGetLastError(nullptr);
  EXPECT_EQ(comm, nullptr);
  sieveComm_t sub = nullptr;
  EXPECT_EQ(sieveCommSplitConfig(nullptr, 0, 0, &sub, &config), sieveInvalidArgument);
}

}  // namespace
}  // namespace sieve_test
