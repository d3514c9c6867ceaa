// Ranks as threads of this test process over the loopback transport
// (SIEVE_TRANSPORT=LOOPBACK): the multi-process harness's rank functions
// (mp_harness.h: RankFn, RANK_CHECK, InitComm) run unchanged without UCX and
// without forking, so the algorithms and codecs are checked in seconds.
#ifndef SIEVE_TESTS_SUPPORT_THREAD_RANKS_H_
#define SIEVE_TESTS_SUPPORT_THREAD_RANKS_H_

#include <string>

#include "support/mp_harness.h"

namespace sieve_test {

// fn(rank, nranks, id) runs on one thread per rank; it passes when it returns
// 0. spec.env is set for the whole process while the ranks run and restored
// afterwards (the ranks read their parameters at init); absent ranks and a
// setup function are not supported (an error). Returns "" when every rank
// passed, else one line per failing rank. Ranks still running after
// spec.kill_after_s cannot be killed: the process aborts, naming them.
std::string RunThreadRanks(const RankSpec& spec, const RankFn& fn);

}  // namespace sieve_test

#endif  // SIEVE_TESTS_SUPPORT_THREAD_RANKS_H_
