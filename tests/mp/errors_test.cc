// Failure behaviour in real processes: bad arguments, a rank that never joins, a peer that dies
// or freezes mid-collective, mismatched counts and sieveCommAbort from another thread. Every
// failure must come back as an error code with a message naming the culprit, within a bound.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/types.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <new>
#include <string>
#include <thread>
#include <vector>

#include "support/fault_support.h"
#include "support/mp_harness.h"

namespace sieve_test {
namespace {

constexpr int kMaxTestRanks = 8;
constexpr double kHarnessKillS = 40;  // a hang is reported well before ctest's 300 s

// The first rank other than `self` that `msg` names, or -1.
int NamedPeer(const std::string& msg, int self, int nranks) {
  for (int r = 0; r < nranks; ++r)
    if (r != self && NamesRank(msg, r)) return r;
  return -1;
}

// State the ranks of one test share: an anonymous MAP_SHARED mapping made before the fork, so
// every rank (a child of this process) sees the same atomics.
struct Board {
  std::atomic<int> pid[kMaxTestRanks];
  std::atomic<int> warmed_up;  // ranks whose first all-reduce succeeded
  std::atomic<int> checked;    // ranks that finished their failure check
};

class SharedBoard {
 public:
  SharedBoard() {
    void* mem = mmap(nullptr, sizeof(Board), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
                     -1, 0);
    if (mem == MAP_FAILED) std::abort();
    board_ = new (mem) Board();
    for (auto& p : board_->pid) p.store(0);
    board_->warmed_up.store(0);
    board_->checked.store(0);
  }
  ~SharedBoard() {
    board_->~Board();
    munmap(board_, sizeof(Board));
  }
  SharedBoard(const SharedBoard&) = delete;
  SharedBoard& operator=(const SharedBoard&) = delete;
  Board* get() const { return board_; }

 private:
  Board* board_ = nullptr;
};

// Runs `fn` when the scope ends (on every RANK_CHECK return path too).
class ScopeExit {
 public:
  explicit ScopeExit(std::function<void()> fn) : fn_(std::move(fn)) {}
  ~ScopeExit() { fn_(); }
  ScopeExit(const ScopeExit&) = delete;
  ScopeExit& operator=(const ScopeExit&) = delete;

 private:
  std::function<void()> fn_;
};

RankSpec Spec(int nranks, const char* timeout_s) {
  RankSpec spec;
  spec.nranks = nranks;
  spec.kill_after_s = kHarnessKillS;
  spec.env = {{"SIEVE_TIMEOUT", timeout_s}};
  return spec;
}

// Sum all-reduce of `count` floats with exactly representable values; returns the number of
// wrong elements, or -1 when the call failed.
long CheckedAllReduce(sieveComm_t comm, int rank, int nranks, size_t count) {
  std::vector<float> send(count), recv(count, -1.0f);
  for (size_t i = 0; i < count; ++i) send[i] = float((rank + 1) * int(i % 7 + 1));
  sieveResult_t res =
      sieveAllReduce(send.data(), recv.data(), count, sieveFloat32, sieveSum, comm, nullptr);
  if (res != sieveSuccess) {
    std::fprintf(stderr, "rank %d: all-reduce of %zu floats failed (%d): %s\n", rank, count,
                 int(res), sieveGetLastError(comm));
    return -1;
  }
  long wrong = 0;
  float ranks_sum = float(nranks * (nranks + 1) / 2);
  for (size_t i = 0; i < count; ++i) wrong += recv[i] != ranks_sum * float(i % 7 + 1);
  return wrong;
}

// ---- 1. Bad arguments --------------------------------------------------------------------------

// Makes one call that must be rejected: expects `want` and a message (the communicator's, or
// the thread's when `comm` is NULL) that contains every string in `words`.
void ExpectRejected(const char* what, sieveComm_t comm, const std::function<sieveResult_t()>& call,
                    sieveResult_t want, const std::vector<std::string>& words) {
  sieveResult_t res = call();
  std::string message = sieveGetLastError(comm);
  EXPECT_EQ(res, want) << what << ": " << message;
  EXPECT_NE(message, "") << what;
  for (const std::string& w : words)
    EXPECT_NE(message.find(w), std::string::npos)
        << what << ": message \"" << message << "\" does not mention \"" << w << "\"";
}

int BadArgumentsRank(int rank, int nranks, const sieveUniqueId& id) {
  sieveComm_t comm = nullptr;
  RANK_CHECK(sieveCommInitRank(&comm, nranks, id, rank) == sieveSuccess, "%s",
             sieveGetLastError(nullptr));
  std::vector<double> buf(16, 1.0), out(16 * kMaxTestRanks);
  double* b = buf.data();
  double* o = out.data();
  const sieveResult_t kArg = sieveInvalidArgument;
  const sieveDataType_t kF64 = sieveFloat64;

  ExpectRejected("NULL sendbuff", comm, [&] {
    return sieveAllReduce(nullptr, o, 4, kF64, sieveSum, comm, nullptr);
  }, kArg, {"sieveAllReduce", "sendbuff"});
  ExpectRejected("NULL recvbuff", comm, [&] {
    return sieveAllReduce(b, nullptr, 4, kF64, sieveSum, comm, nullptr);
  }, kArg, {"sieveAllReduce", "recvbuff"});
  ExpectRejected("NULL recvbuff (all-gather)", comm, [&] {
    return sieveAllGather(b, nullptr, 4, kF64, comm, nullptr);
  }, kArg, {"sieveAllGather", "recvbuff"});
  ExpectRejected("datatype 10", comm, [&] {
    return sieveAllReduce(b, o, 4, sieveDataType_t(10), sieveSum, comm, nullptr);
  }, kArg, {"datatype", "10"});
  ExpectRejected("datatype -1", comm, [&] {
    return sieveAllReduce(b, o, 4, sieveDataType_t(-1), sieveSum, comm, nullptr);
  }, kArg, {"datatype", "-1"});
  ExpectRejected("op 5", comm, [&] {
    return sieveAllReduce(b, o, 4, kF64, sieveRedOp_t(5), comm, nullptr);
  }, kArg, {"sieveAllReduce", "op 5"});
  ExpectRejected("op 5 (reduce-scatter)", comm, [&] {
    return sieveReduceScatter(b, o, 4, kF64, sieveRedOp_t(5), comm, nullptr);
  }, kArg, {"sieveReduceScatter", "op 5"});
  ExpectRejected("broadcast root -1", comm, [&] {
    return sieveBroadcast(b, o, 4, kF64, -1, comm, nullptr);
  }, kArg, {"sieveBroadcast", "root", "-1"});
  ExpectRejected("broadcast root 3", comm, [&] {
    return sieveBroadcast(b, o, 4, kF64, 3, comm, nullptr);
  }, kArg, {"sieveBroadcast", "root", "3"});
  ExpectRejected("reduce root -1", comm, [&] {
    return sieveReduce(b, o, 4, kF64, sieveSum, -1, comm, nullptr);
  }, kArg, {"sieveReduce", "root", "-1"});
  ExpectRejected("reduce root 3", comm, [&] {
    return sieveReduce(b, o, 4, kF64, sieveSum, 3, comm, nullptr);
  }, kArg, {"sieveReduce", "root", "3"});
  ExpectRejected("send peer 3", comm, [&] {
    return sieveSend(b, 4, kF64, 3, comm, nullptr);
  }, kArg, {"sieveSend", "peer", "3"});
  ExpectRejected("recv peer -1", comm, [&] {
    return sieveRecv(o, 4, kF64, -1, comm, nullptr);
  }, kArg, {"sieveRecv", "peer", "-1"});
  ExpectRejected("byte size overflow", comm, [&] {
    return sieveAllReduce(b, o, SIZE_MAX / 2, kF64, sieveSum, comm, nullptr);
  }, kArg, {"sieveAllReduce", "count"});
  ExpectRejected("byte size overflow (all-gather)", comm, [&] {
    return sieveAllGather(b, o, SIZE_MAX / 16, kF64, comm, nullptr);
  }, kArg, {"sieveAllGather", "count"});
  ExpectRejected("byte size overflow (send)", comm, [&] {
    return sieveSend(b, SIZE_MAX / 2, kF64, 0, comm, nullptr);
  }, kArg, {"sieveSend", "count"});

  // No communicator: the message is the calling thread's.
  ExpectRejected("NULL comm", nullptr, [&] {
    return sieveAllReduce(b, o, 4, kF64, sieveSum, nullptr, nullptr);
  }, kArg, {"sieveAllReduce", "comm"});
  ExpectRejected("GroupEnd without GroupStart", nullptr, [] { return sieveGroupEnd(); },
                 sieveInvalidUsage, {"sieveGroupStart"});

  // Argument errors are local: the communicator stays healthy.
  sieveResult_t async = sieveInternalError;
  EXPECT_EQ(sieveCommGetAsyncError(comm, &async), sieveSuccess);
  EXPECT_EQ(async, sieveSuccess) << "an argument error poisoned the communicator";

  // count == 0 with NULL buffers is valid and still takes part in the sequence and the agreement
  // on every rank (DESIGN.md 1.6): the all-reduce below still pairs up.
  EXPECT_EQ(sieveAllReduce(nullptr, nullptr, 0, sieveFloat32, sieveSum, comm, nullptr),
            sieveSuccess);
  EXPECT_EQ(sieveBroadcast(nullptr, nullptr, 0, sieveFloat32, 1, comm, nullptr), sieveSuccess);
  EXPECT_EQ(sieveReduce(nullptr, nullptr, 0, sieveFloat32, sieveMax, 2, comm, nullptr),
            sieveSuccess);
  EXPECT_EQ(sieveAllGather(nullptr, nullptr, 0, sieveFloat32, comm, nullptr), sieveSuccess);
  EXPECT_EQ(sieveReduceScatter(nullptr, nullptr, 0, sieveFloat32, sieveSum, comm, nullptr),
            sieveSuccess);

  EXPECT_EQ(CheckedAllReduce(comm, rank, nranks, 1001), 0)
      << "the communicator no longer works after the rejected calls";
  EXPECT_EQ(sieveCommDestroy(comm), sieveSuccess);
  return 0;
}

TEST(ErrorsTest, BadArgumentsAreRejectedWithMessageAndCommStillWorks) {
  EXPECT_EQ(RunRanks(Spec(3, "3"), BadArgumentsRank), "");
}

// ---- 2. A rank that never joins --------------------------------------------------------------

TEST(ErrorsTest, MissingRankFailsInitNamingIt) {
  RankSpec spec = Spec(4, "2");
  spec.absent = {3};
  const double kBoundS = 2 + 3;
  std::string failures = RunRanks(spec, [&](int rank, int nranks, const sieveUniqueId& id) {
    sieveComm_t comm = nullptr;
    auto start = Clock::now();
    sieveResult_t res = sieveCommInitRank(&comm, nranks, id, rank);
    double took = SecondsSince(start);
    std::string msg = sieveGetLastError(nullptr);
    std::fprintf(stderr, "rank %d: init returned %d after %.2f s: %s\n", rank, int(res), took,
                 msg.c_str());
    RANK_CHECK(res != sieveSuccess, "init succeeded without rank 3");
    EXPECT_EQ(res, sieveRemoteError) << msg;
    EXPECT_LT(took, kBoundS) << "init took too long to notice the missing rank";
    EXPECT_TRUE(NamesRank(msg, 3)) << "message does not name rank 3: " << msg;
    return 0;
  });
  EXPECT_EQ(failures, "");
}

// ---- 3. A peer that dies between collectives -------------------------------------------------

TEST(ErrorsTest, DeadPeerMidCollectiveIsDetectedAndCommBecomesUnusable) {
  SharedBoard shared;
  Board* board = shared.get();
  const double kBoundS = 3 + 3;
  std::string failures = RunRanks(Spec(3, "3"), [&](int rank, int nranks,
                                                   const sieveUniqueId& id) {
    sieveComm_t comm = nullptr;
    RANK_CHECK(sieveCommInitRank(&comm, nranks, id, rank) == sieveSuccess, "%s",
               sieveGetLastError(nullptr));
    RANK_CHECK(CheckedAllReduce(comm, rank, nranks, 1001) == 0, "warm-up all-reduce");
    board->warmed_up.fetch_add(1);
    if (rank == 2) {
      // Leave only once the others are past the warm-up, without destroying anything.
      WaitFor([&] { return board->warmed_up.load() == nranks; }, 20);
      board->pid[2].store(getpid());
      std::fflush(nullptr);
      _exit(0);
    }
    // Start the next collective only once rank 2 is really gone (a zombie of the harness).
    RANK_CHECK(WaitFor([&] { return board->pid[2].load() != 0; }, 20), "rank 2 never exited");
    pid_t dead = board->pid[2].load();
    RANK_CHECK(WaitFor([&] { char s = ProcState(dead); return s == 'Z' || s == 'X' || s == 0; },
                       20),
               "rank 2 (pid %d) is still alive", int(dead));

    std::vector<float> data(1 << 20, 1.0f);
    auto start = Clock::now();
    sieveResult_t res = sieveAllReduce(data.data(), data.data(), data.size(), sieveFloat32,
                                       sieveSum, comm, nullptr);
    double took = SecondsSince(start);
    std::string msg = sieveGetLastError(comm);
    std::fprintf(stderr, "rank %d: all-reduce with dead rank 2 returned %d after %.2f s: %s\n",
                 rank, int(res), took, msg.c_str());
    RANK_CHECK(res != sieveSuccess, "all-reduce succeeded without rank 2");
    EXPECT_EQ(res, sieveRemoteError) << msg;
    EXPECT_LT(took, kBoundS) << "dead peer detected too slowly";
    EXPECT_NE(NamedPeer(msg, rank, nranks), -1) << "message names no peer rank: " << msg;

    sieveResult_t async = sieveSuccess;
    EXPECT_EQ(sieveCommGetAsyncError(comm, &async), sieveSuccess);
    EXPECT_NE(async, sieveSuccess) << "async error not set after a peer failure";

    // The communicator is unusable: the next call fails at once.
    start = Clock::now();
    float one = 1.0f;
    res = sieveAllReduce(&one, &one, 1, sieveFloat32, sieveSum, comm, nullptr);
    took = SecondsSince(start);
    EXPECT_NE(res, sieveSuccess) << "a call on a failed communicator succeeded";
    EXPECT_LT(took, 0.5) << "a call on a failed communicator should fail immediately";
    EXPECT_NE(std::string(sieveGetLastError(comm)), "");

    // Rank 0 aborts, rank 1 destroys: both must come back promptly.
    start = Clock::now();
    sieveResult_t freed = rank == 0 ? sieveCommAbort(comm) : sieveCommDestroy(comm);
    took = SecondsSince(start);
    std::fprintf(stderr, "rank %d: %s returned %d after %.2f s\n", rank,
                 rank == 0 ? "abort" : "destroy", int(freed), took);
    EXPECT_EQ(freed, sieveSuccess);
    EXPECT_LT(took, 4.0) << (rank == 0 ? "abort" : "destroy") << " took too long";
    return 0;
  });
  EXPECT_EQ(failures, "");
}

// ---- 4. A frozen peer (SIGSTOP) --------------------------------------------------------------

TEST(ErrorsTest, FrozenPeerTimesOutNamingARank) {
  SharedBoard shared;
  Board* board = shared.get();
  const double kBoundS = 3 + 3;
  std::string failures = RunRanks(Spec(3, "3"), [&](int rank, int nranks,
                                                   const sieveUniqueId& id) {
    sieveComm_t comm = nullptr;
    RANK_CHECK(sieveCommInitRank(&comm, nranks, id, rank) == sieveSuccess, "%s",
               sieveGetLastError(nullptr));
    RANK_CHECK(CheckedAllReduce(comm, rank, nranks, 1001) == 0, "warm-up all-reduce");
    board->warmed_up.fetch_add(1);
    if (rank == 2) {
      WaitFor([&] { return board->warmed_up.load() == nranks; }, 20);
      board->pid[2].store(getpid());
      std::fflush(nullptr);
      raise(SIGSTOP);  // rank 0 kills it with SIGKILL once its check is done
      return 0;
    }
    RANK_CHECK(WaitFor([&] { return board->pid[2].load() != 0; }, 20), "rank 2 never stopped");
    pid_t frozen = board->pid[2].load();
    // Rank 0 kills the frozen rank whichever way this function returns.
    ScopeExit kill_frozen([&] {
      if (rank != 0) return;
      WaitFor([&] { return board->checked.load() == 2; }, 2 * kBoundS);
      kill(frozen, SIGKILL);
    });
    RANK_CHECK(WaitFor([&] { return ProcState(frozen) == 'T'; }, 20), "rank 2 is not stopped");

    std::vector<float> data(1 << 20, 1.0f);
    auto start = Clock::now();
    sieveResult_t res = sieveAllReduce(data.data(), data.data(), data.size(), sieveFloat32,
                                       sieveSum, comm, nullptr);
    double took = SecondsSince(start);
    board->checked.fetch_add(1);
    std::string msg = sieveGetLastError(comm);
    std::fprintf(stderr, "rank %d: all-reduce with frozen rank 2 returned %d after %.2f s: %s\n",
                 rank, int(res), took, msg.c_str());
    RANK_CHECK(res != sieveSuccess, "all-reduce succeeded with rank 2 frozen");
    EXPECT_EQ(res, sieveRemoteError) << msg;
    EXPECT_LT(took, kBoundS) << "frozen peer detected too slowly";
    EXPECT_NE(NamedPeer(msg, rank, nranks), -1) << "message names no peer rank: " << msg;
    sieveResult_t async = sieveSuccess;
    EXPECT_EQ(sieveCommGetAsyncError(comm, &async), sieveSuccess);
    EXPECT_NE(async, sieveSuccess);
    start = Clock::now();
    EXPECT_EQ(sieveCommAbort(comm), sieveSuccess);
    EXPECT_LT(SecondsSince(start), 4.0) << "abort took too long";
    return 0;
  });
  // Rank 2 is expected to die by rank 0's SIGKILL; ranks 0 and 1 must pass.
  EXPECT_EQ(failures, "rank 2 killed by signal 9\n");
}

// ---- 5. Mismatched counts --------------------------------------------------------------------

TEST(ErrorsTest, MismatchedCountsFailOnBothRanks) {
  const double kBoundS = 3 + 3;
  std::string failures = RunRanks(Spec(2, "3"), [&](int rank, int nranks,
                                                   const sieveUniqueId& id) {
    sieveComm_t comm = nullptr;
    RANK_CHECK(sieveCommInitRank(&comm, nranks, id, rank) == sieveSuccess, "%s",
               sieveGetLastError(nullptr));
    size_t count = rank == 0 ? 1000 : 2000;
    std::vector<float> data(count, 1.0f);
    auto start = Clock::now();
    sieveResult_t res = sieveAllReduce(data.data(), data.data(), count, sieveFloat32, sieveSum,
                                       comm, nullptr);
    double took = SecondsSince(start);
    std::string msg = sieveGetLastError(comm);
    std::fprintf(stderr, "rank %d: all-reduce of %zu floats (peer disagrees) returned %d after "
                 "%.2f s: %s\n", rank, count, int(res), took, msg.c_str());
    EXPECT_NE(res, sieveSuccess) << "mismatched all-reduce succeeded on rank " << rank;
    EXPECT_LT(took, kBoundS) << "mismatch detected too slowly";
    if (res != sieveSuccess) {
      EXPECT_NE(msg, "");
    }
    EXPECT_EQ(sieveCommAbort(comm), sieveSuccess);
    return 0;
  });
  EXPECT_EQ(failures, "");
}

// ---- 6. sieveCommAbort from another thread ---------------------------------------------------

TEST(ErrorsTest, AbortFromAnotherThreadUnblocksAllReduce) {
  std::string failures = RunRanks(Spec(2, "30"), [&](int rank, int nranks,
                                                    const sieveUniqueId& id) {
    sieveComm_t comm = nullptr;
    RANK_CHECK(sieveCommInitRank(&comm, nranks, id, rank) == sieveSuccess, "%s",
               sieveGetLastError(nullptr));
    if (rank == 1) {  // never joins the all-reduce
      std::this_thread::sleep_for(std::chrono::seconds(3));
      EXPECT_EQ(sieveCommDestroy(comm), sieveSuccess);
      return 0;
    }
    Clock::time_point abort_start, abort_end;
    std::thread aborter([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      abort_start = Clock::now();
      sieveCommAbort(comm);
      abort_end = Clock::now();
    });
    std::vector<float> data(1 << 16, 1.0f);
    sieveResult_t res = sieveAllReduce(data.data(), data.data(), data.size(), sieveFloat32,
                                       sieveSum, comm, nullptr);
    auto returned = Clock::now();
    // The communicator may already be freed: read the thread's copy of the message.
    std::string msg = sieveGetLastError(nullptr);
    aborter.join();
    double after_abort = std::chrono::duration<double>(returned - abort_start).count();
    double abort_took = std::chrono::duration<double>(abort_end - abort_start).count();
    std::fprintf(stderr, "rank 0: all-reduce returned %d %.3f s after the abort started (abort "
                 "took %.3f s): %s\n", int(res), after_abort, abort_took, msg.c_str());
    EXPECT_NE(res, sieveSuccess) << "the aborted all-reduce succeeded";
    EXPECT_GE(after_abort, 0.0) << "the all-reduce returned before the abort: " << msg;
    EXPECT_LT(after_abort, 1.0) << "the blocked all-reduce ignored the abort";
    EXPECT_LT(abort_took, 2.0) << "sieveCommAbort took too long";
    EXPECT_NE(msg, "");
    return 0;
  });
  EXPECT_EQ(failures, "");
}

}  // namespace
}  // namespace sieve_test
