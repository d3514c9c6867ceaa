// Helpers for the failure tests: state shared by the forked ranks and the
// test process, process-state polling, and a watcher thread in the test
// process that timestamps when a rank dies or stops (steady_clock is
// CLOCK_MONOTONIC, comparable across processes).
#ifndef SIEVE_TESTS_SUPPORT_FAULT_SUPPORT_H_
#define SIEVE_TESTS_SUPPORT_FAULT_SUPPORT_H_

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <chrono>
#include <functional>
#include <string>
#include <thread>

#include "sieve.h"

namespace sieve_test {

using Clock = std::chrono::steady_clock;
constexpr int kMaxFaultRanks = 8;

double NowS();  // steady clock, seconds
double SecondsSince(Clock::time_point start);
bool WaitFor(const std::function<bool()>& pred, double timeout_s);
// State letter from /proc/<pid>/stat ('R', 'S', 'T', 'Z', ...), or 0 when gone.
char ProcState(pid_t pid);
// True when `msg` names rank r ("rank 2", "ranks 1, 2", "on rank 2").
bool NamesRank(const std::string& msg, int r);

// Lives in an anonymous MAP_SHARED mapping made before the fork.
struct FaultBoard {
  std::atomic<int> pid[kMaxFaultRanks];
  std::atomic<int> started;     // ranks that passed init and warm-up
  std::atomic<int> reported;    // survivors that finished their failure check
  std::atomic<int> rejoined;    // survivors that joined the new communicator
  std::atomic<double> event_s;  // when the victim died / stopped (watcher)
  std::atomic<double> cont_s;   // when the watcher sent SIGCONT
  std::atomic<int> id_ready;
  sieveUniqueId new_id;         // the survivors' fresh communicator
  std::atomic<double> result_s[kMaxFaultRanks];  // when each rank's call returned
  std::atomic<int> result[kMaxFaultRanks];       // what it returned (-1: not yet)
  std::atomic<uint64_t> seed;                    // fresh per test: inputs of RejoinAndCheck
};

class SharedFaultBoard {
 public:
  SharedFaultBoard();
  ~SharedFaultBoard();
  SharedFaultBoard(const SharedFaultBoard&) = delete;
  SharedFaultBoard& operator=(const SharedFaultBoard&) = delete;
  FaultBoard* operator->() const { return board_; }
  FaultBoard* get() const { return board_; }

 private:
  FaultBoard* board_;
};

// For RankSpec::watch: once all `nranks` pids are on the board, polls the
// victim until it is a zombie/gone (or stopped, when `stopped` is set) and
// stores the time in event_s. With `cont_after_reports` > 0 it then waits for
// that many survivor reports and sends SIGCONT (time in cont_s). Bounded waits.
std::function<void()> VictimWatch(FaultBoard* board, int nranks, int victim, bool stopped,
                                  int cont_after_reports);

// The survivors of a failed communicator build a fresh one (the lowest
// surviving rank creates the id) and check an exact int32 sum all-reduce of
// `count` elements on it. Returns 0 on success (RANK_CHECK style messages).
int RejoinAndCheck(FaultBoard* board, int rank, int nranks, int victim, size_t count);

// A float sum all-reduce of `count` elements whose result every rank can
// check alone: the number of wrong elements, or -1 when the call failed
// (*res says how).
long CheckedAllReduce(sieveComm_t comm, int rank, int nranks, size_t count, sieveResult_t* res);

}  // namespace sieve_test

#endif  // SIEVE_TESTS_SUPPORT_FAULT_SUPPORT_H_
