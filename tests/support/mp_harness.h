// Multi-process test harness: runs a rank function in N forked processes (real
// processes, real UCX), hands them one unique id through shared memory, and
// reports which ranks failed, crashed or hung.
#ifndef SIEVE_TESTS_SUPPORT_MP_HARNESS_H_
#define SIEVE_TESTS_SUPPORT_MP_HARNESS_H_

#include <functional>
#include <string>
#include <vector>

#include "sieve.h"

namespace sieve_test {

struct RankSpec {
  int nranks = 2;
  // Ranks listed here are not started (to test a missing rank).
  std::vector<int> absent;
  // Seconds after which the harness kills every rank and reports a hang.
  double kill_after_s = 240;
  // Environment set in every rank before it runs (e.g. SIEVE_TIMEOUT=3).
  std::vector<std::pair<std::string, std::string>> env;
  // Runs first in each rank's process, before the unique id is made (e.g. to
  // enter a network namespace); a non-zero return fails the rank.
  std::function<int(int rank)> setup;
  // Runs on a thread of the test process, started only once every rank is
  // forked, and joined before RunRanks returns (so it must end by itself: bounded
  // waits). A test that watches or disturbs its ranks (kills one, cuts a link) does
  // it here, never on a thread it starts itself: a thread alive during fork() can
  // leave a child holding one of its locks (the loader's, which UCX's module
  // loading in ucp_init then waits on forever).
  std::function<void()> watch;
};

// fn(rank, nranks, id) runs in a child; it passes when it returns 0 and no
// gtest assertion failed inside it. Returns "" when every started rank passed,
// else one line per failing rank.
using RankFn = std::function<int(int rank, int nranks, const sieveUniqueId& id)>;
std::string RunRanks(const RankSpec& spec, const RankFn& fn);

// Inside a RankFn: *comm joins the ranks' communicator (sieveCommInitRank); 0 on success, else
// 1 with the reason in sieveGetLastError(nullptr).
int InitComm(int rank, int nranks, const sieveUniqueId& id, sieveComm_t* comm);

// Fails the calling rank's process with a message (for use inside a RankFn).
#define RANK_CHECK(cond, ...)                                        \
  do {                                                               \
    if (!(cond)) {                                                   \
      std::fprintf(stderr, "rank check failed: %s: ", #cond);        \
      std::fprintf(stderr, __VA_ARGS__);                             \
      std::fprintf(stderr, "\n");                                    \
      return 1;                                                      \
    }                                                                \
  } while (0)

}  // namespace sieve_test

#endif  // SIEVE_TESTS_SUPPORT_MP_HARNESS_H_
