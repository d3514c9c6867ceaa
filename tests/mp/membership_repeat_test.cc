// One repetition of bench/elastic_repeat.sh (CTest runs it once with the defaults below): 4 ranks, one killed
// at the point the environment names, the survivors recover (agree on the failed ranks,
// shrink, retry) and each reports the original ranks of its final communicator; the test
// passes when every survivor reports the same membership, without the victim.
//   ELASTIC_POINT  rs | ag | fingerprint | verdict   (SIEVE_FAULT kill in the 4 MiB all-reduce)
//                  grow                              (SIGKILL from outside, during a grow of
//                                                     the 4 ranks by a 5th)
//   ELASTIC_NTH    the SIEVE_FAULT occurrence (rs, ag, fingerprint, verdict)
//   ELASTIC_VICTIM the rank killed (0..3)
//   ELASTIC_DELAY_MS grow: how long after the members start the grow the victim is killed
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "support/fault_support.h"
#include "support/mp_harness.h"

namespace sieve_test {
namespace {

constexpr int kMembers = 4, kJoiner = 4;

std::string Env(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return v != nullptr ? v : fallback;
}

// An exact int32 sum on comm; true when it succeeded.
bool Works(sieveComm_t comm) {
  int rank = 0, n = 0;
  sieveCommUserRank(comm, &rank);
  sieveCommCount(comm, &n);
  sieveResult_t res;
  return CheckedAllReduce(comm, rank, n, 5003, &res) == 0;
}

// Agree, shrink, retry (a rank may die during a recovery too) until a collective works on the
// current communicator; then the bitmask of the original ranks it holds, or -1.
int Recover(sieveComm_t comm, int original) {
  for (int attempt = 0; attempt < 4; ++attempt) {
    int failed[8], nfailed = 0;
    if (sieveCommAgreeFailedRanks(comm, failed, 8, &nfailed) != sieveSuccess) {
      std::fprintf(stderr, "rank %d: agree: %s\n", original, sieveGetLastError(comm));
      return -1;
    }
    sieveComm_t next = nullptr;
    if (sieveCommShrink(comm, failed, nfailed, &next, nullptr, SIEVE_SHRINK_ABORT) != sieveSuccess) {
      std::fprintf(stderr, "rank %d: shrink (attempt %d): %s\n", original, attempt,
                   sieveGetLastError(comm));
      continue;  // agree again on the same communicator
    }
    sieveCommDestroy(comm);
    comm = next;
    if (Works(comm)) break;
  }
  int n = 0;
  sieveCommCount(comm, &n);
  std::vector<int32_t> all(n, -1);
  int32_t mine = original;
  int mask = -1;
  if (sieveAllGather(&mine, all.data(), 1, sieveInt32, comm, nullptr) == sieveSuccess) {
    mask = 0;
    for (int32_t r : all) mask |= 1 << r;
  }
  sieveCommDestroy(comm);
  return mask;
}

TEST(RepeatKill, SurvivorsAgreeOnTheNewMembership) {
  const std::string point = Env("ELASTIC_POINT", "rs");
  const int nth = std::atoi(Env("ELASTIC_NTH", "3").c_str());
  const int victim = std::atoi(Env("ELASTIC_VICTIM", "1").c_str());
  const int delay_ms = std::atoi(Env("ELASTIC_DELAY_MS", "5").c_str());
  const bool grow = point == "grow";
  std::string fault;
  if (point == "rs" || point == "ag") fault = "on=send,min=65536";
  if (point == "fingerprint") fault = "on=send,size=48";
  if (point == "verdict") fault = "on=send,size=12";
  SharedFaultBoard board;
  for (auto& r : board->result) r.store(-3);  // -3: never reported
  RankSpec spec;
  spec.nranks = grow ? kMembers + 1 : kMembers;
  spec.kill_after_s = 60;
  spec.env = {{"SIEVE_TIMEOUT", "3"}};
  if (!grow)
    spec.env.push_back({"SIEVE_FAULT", "rank=" + std::to_string(victim) + "," + fault + ",nth=" +
                                           std::to_string(nth) + ",do=kill"});
  if (grow)
    spec.watch = [&] {
      if (!WaitFor([&] { return board->started.load() == kMembers; }, 30)) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
      kill(board->pid[victim].load(), SIGKILL);
    };
  std::string failures = RunRanks(spec, [&](int rank, int, const sieveUniqueId& id) {
    board->pid[rank].store(getpid());
    if (rank == kJoiner) {
      RANK_CHECK(WaitFor([&] { return board->id_ready.load() == 1; }, 30), "no grow id");
      sieveUniqueId gid = board->new_id;
      sieveComm_t grown = nullptr;
      if (sieveCommGrow(nullptr, kMembers + 1, &gid, kJoiner, &grown, nullptr) != sieveSuccess) {
        board->result[rank].store(-2);  // not admitted: the grow failed everywhere
        return 0;
      }
      board->result[rank].store(Works(grown) ? 0x1f : Recover(grown, rank));
      return 0;
    }
    sieveComm_t comm = nullptr;
    RANK_CHECK(sieveCommInitRank(&comm, kMembers, id, rank) == sieveSuccess, "%s",
               sieveGetLastError(nullptr));
    RANK_CHECK(Works(comm), "warm-up: %s", sieveGetLastError(comm));
    if (!grow) {
      sieveResult_t res;
      CheckedAllReduce(comm, rank, kMembers, size_t{1} << 20, &res);
      if (res == sieveSuccess && !Works(comm)) res = sieveRemoteError;
      board->result[rank].store(res == sieveSuccess ? 0xf : Recover(comm, rank));
      return 0;
    }
    sieveUniqueId gid;
    if (rank == 0) {
      RANK_CHECK(sieveCommGetUniqueId(comm, &gid) == sieveSuccess, "%s", sieveGetLastError(comm));
      board->new_id = gid;
      board->id_ready.store(1);
    }
    board->started.fetch_add(1);
    sieveComm_t grown = nullptr;
    if (sieveCommGrow(comm, kMembers + 1, rank == 0 ? &gid : nullptr, -1, &grown, nullptr) !=
        sieveSuccess) {
      std::fprintf(stderr, "rank %d: grow failed: %s\n", rank, sieveGetLastError(comm));
      board->result[rank].store(Recover(comm, rank));
      return 0;
    }
    sieveCommDestroy(comm);
    board->result[rank].store(Works(grown) ? 0x1f : Recover(grown, rank));
    return 0;
  });
  EXPECT_EQ(failures, "rank " + std::to_string(victim) + " killed by signal 9\n");
  // Every survivor reports the same membership, which lacks the victim and holds every
  // surviving member (the joiner only when the grow went through).
  int agreed = -4;
  std::string reports;
  for (int r = 0; r < spec.nranks; ++r) {
    if (r == victim) continue;
    int m = board->result[r].load();
    reports += " " + std::to_string(r) + ":" + std::to_string(m);
    if (m == -2) continue;
    if (agreed == -4) agreed = m;
    EXPECT_EQ(m, agreed) << "survivors disagree on the membership:" << reports;
  }
  EXPECT_GE(agreed, 0) << reports;
  EXPECT_EQ(agreed & (1 << victim), 0) << reports;
  for (int r = 0; r < kMembers; ++r) {
    if (r != victim) {
      EXPECT_NE(agreed & (1 << r), 0) << "member " << r << " left out:" << reports;
    }
  }
  std::printf("ELASTIC_RESULT point=%s nth=%d victim=%d delay_ms=%d membership=0x%x reports=%s\n",
              point.c_str(), nth, victim, delay_ms, agreed, reports.c_str());
}

}  // namespace
}  // namespace sieve_test
