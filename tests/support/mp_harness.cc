// RunRanks: fork, share the id through an anonymous shared mapping (rank 0
// creates it, so the bootstrap root lives in a rank, not in the test runner),
// wait with a hang guard.
#include "support/mp_harness.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

namespace sieve_test {

namespace {

struct SharedId {
  std::atomic<int> ready;
  sieveUniqueId id;
};

int RunChild(const RankSpec& spec, const RankFn& fn, int rank, SharedId* shared) {
  for (const auto& kv : spec.env) setenv(kv.first.c_str(), kv.second.c_str(), 1);
  if (spec.setup) {
    int rc = spec.setup(rank);
    if (rc != 0) return rc;
  }
  if (rank == 0) {
    sieveUniqueId id;
    if (sieveGetUniqueId(&id) != sieveSuccess) {
      std::fprintf(stderr, "sieveGetUniqueId failed: %s\n", sieveGetLastError(nullptr));
      return 2;
    }
    shared->id = id;
    shared->ready.store(1);
  } else {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (shared->ready.load() == 0) {
      if (std::chrono::steady_clock::now() > deadline) return 3;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
  int rc = fn(rank, spec.nranks, shared->id);
  if (rc == 0 && ::testing::Test::HasFailure()) rc = 4;
  return rc;
}

// Prints where a hung rank's threads are (gdb, when installed), so a hang in CI
// says where it was before the harness kills it.
void PrintStacks(pid_t pid, int rank) {
  char cmd[200];
  std::snprintf(cmd, sizeof(cmd),
                "command -v gdb >/dev/null && timeout 30 gdb -p %d -batch -nx "
                "-ex 'thread apply all bt 20' 2>/dev/null | grep -E '^(#|Thread)' >&2",
                static_cast<int>(pid));
  std::fprintf(stderr, "rank %d (pid %d) hung; its threads:\n", rank, static_cast<int>(pid));
  std::fflush(stderr);
  if (std::system(cmd) != 0) std::fprintf(stderr, "(no stacks: gdb missing or failed)\n");
}

}  // namespace

std::string RunRanks(const RankSpec& spec, const RankFn& fn) {
  void* mem = mmap(nullptr, sizeof(SharedId), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
                   -1, 0);
  if (mem == MAP_FAILED) return "mmap failed";
  auto* shared = new (mem) SharedId();
  shared->ready.store(0);
  std::fflush(nullptr);
  std::vector<pid_t> pids(spec.nranks, -1);
  for (int r = 0; r < spec.nranks; ++r) {
    bool absent = false;
    for (int a : spec.absent) absent |= a == r;
    if (absent) continue;
    pid_t pid = fork();
    if (pid == 0) {
      int rc = RunChild(spec, fn, r, shared);
      std::fflush(nullptr);
      _exit(rc);
    }
    pids[r] = pid;
  }
  std::thread watcher;
  if (spec.watch) watcher = std::thread(spec.watch);
  std::string failures;
  auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(int(spec.kill_after_s * 1000));
  for (int r = 0; r < spec.nranks; ++r) {
    if (pids[r] < 0) continue;
    int status = 0;
    while (waitpid(pids[r], &status, WNOHANG) == 0) {
      if (std::chrono::steady_clock::now() > deadline) {
        PrintStacks(pids[r], r);
        for (pid_t p : pids)
          if (p > 0) kill(p, SIGKILL);
        failures += "rank " + std::to_string(r) + " hung (killed after " +
                    std::to_string(spec.kill_after_s) + " s)\n";
        waitpid(pids[r], &status, 0);
        status = 0;
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    if (WIFEXITED(status) && WEXITSTATUS(status) != 0)
      failures += "rank " + std::to_string(r) + " exited with " +
                  std::to_string(WEXITSTATUS(status)) + "\n";
    if (WIFSIGNALED(status))
      failures += "rank " + std::to_string(r) + " killed by signal " +
                  std::to_string(WTERMSIG(status)) + "\n";
  }
  if (watcher.joinable()) watcher.join();
  munmap(mem, sizeof(SharedId));
  return failures;
}

int InitComm(int rank, int nranks, const sieveUniqueId& id, sieveComm_t* comm) {
  return sieveCommInitRank(comm, nranks, id, rank) == sieveSuccess ? 0 : 1;
}

}  // namespace sieve_test
