// plan/algo_choice.h through the C API: the algorithm each all-reduce takes and
// the reason on its INFO line, logged once per (collective, size class) however
// many calls run. Hosts simulated with SIEVE_HOST_ID; each rank reads its own
// SIEVE_DEBUG_FILE.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "api/arg_check.h"
#include "plan/link_rate.h"
#include "support/mp_harness.h"

namespace sieve_test {
namespace {

std::string OwnLogPath() { return "/tmp/sieve-plan-test-" + std::to_string(getpid()) + ".log"; }

std::string ReadOwnLog() {
  std::ifstream f(OwnLogPath());
  std::stringstream text;
  text << f.rdbuf();
  return text.str();
}

// Lines of `log` holding every one of `parts`.
int Lines(const std::string& log, const std::vector<std::string>& parts) {
  int n = 0;
  std::istringstream in(log);
  for (std::string line; std::getline(in, line);) {
    bool all = true;
    for (const std::string& p : parts) all = all && line.find(p) != std::string::npos;
    n += all;
  }
  return n;
}

RankSpec Spec(int n, std::vector<std::pair<std::string, std::string>> extra = {}) {
  RankSpec spec;
  spec.nranks = n;
  spec.env = {{"SIEVE_TIMEOUT", "60"},
              {"SIEVE_DEBUG", "INFO"},
              {"SIEVE_DEBUG_SUBSYS", "COLL"},
              {"SIEVE_DEBUG_FILE", "/tmp/sieve-plan-test-%p.log"}};
  for (auto& kv : extra) spec.env.push_back(kv);
  return spec;
}

int AllReduce(sieveComm_t comm, size_t count) {
  std::vector<float> in(count, 1.0f), out(count);
  RANK_CHECK(sieveAllReduce(in.data(), out.data(), count, sieveFloat32, sieveSum, comm, nullptr) ==
                 sieveSuccess,
             "%s", sieveGetLastError(comm));
  return 0;
}

int Ternary(sieveComm_t comm, size_t count, int feedback, uint64_t step) {
  std::vector<float> in(count, 0.5f), out(count);
  sieveTernaryParams_t p{};
  p.seed = 7;
  p.step = step;
  p.error_feedback = feedback;
  RANK_CHECK(sieveAllReduceTernary(in.data(), out.data(), count, sieveFloat32, sieveSum, &p, comm,
                                   nullptr) == sieveSuccess,
             "%s", sieveGetLastError(comm));
  return 0;
}

// 2 hosts x 2 ranks: the dense and ternary all-reduces go hierarchical, except a
// call with fewer elements than ranks on a host (flat: the tree, small on 4 ranks)
// and a ternary call with error feedback (flat, the reason says why).
TEST(AlgoChoice, HierarchicalUnlessTooSmallOrErrorFeedback) {
  EXPECT_EQ(RunRanks(Spec(4),
                     [](int rank, int n, const sieveUniqueId& id) {
                       setenv("SIEVE_HOST_ID", rank < 2 ? "plan-host-a" : "plan-host-b", 1);
                       sieveComm_t comm = nullptr;
                       RANK_CHECK(InitComm(rank, n, id, &comm) == 0, "%s",
                                  sieveGetLastError(nullptr));
                       for (int i = 0; i < 3; ++i) {
                         if (AllReduce(comm, 1000) != 0 || AllReduce(comm, 1) != 0) return 1;
                         if (Ternary(comm, 4096, 0, i) != 0 || Ternary(comm, 4096, 1, i) != 0)
                           return 1;
                       }
                       RANK_CHECK(sieveCommDestroy(comm) == sieveSuccess, "destroy");
                       const std::string log = ReadOwnLog();
                       std::remove(OwnLogPath().c_str());
                       RANK_CHECK(Lines(log, {"allreduce of 4000 bytes on 4 ranks: hierarchical",
                                              "several hosts"}) == 1,
                                  "dense hierarchical line:\n%s", log.c_str());
                       RANK_CHECK(Lines(log, {"allreduce of 4 bytes on 4 ranks: tree",
                                              "SIEVE_TREE_THRESHOLD"}) == 1,
                                  "dense tree line:\n%s", log.c_str());
                       RANK_CHECK(Lines(log, {"allreduce-ternary of", ": hierarchical"}) == 1,
                                  "ternary hierarchical line:\n%s", log.c_str());
                       RANK_CHECK(Lines(log, {"allreduce-ternary of", "4 ranks: tree",
                                              "not hierarchical: error feedback"}) == 1,
                                  "ternary error-feedback line:\n%s", log.c_str());
                       return 0;
                     }),
            "");
}

// Where SIEVE_LINK_RATE is unset, the ternary calls learn the rate: every rank
// sends the value its last call gave (plan/link_rate.h) with the next call's scales
// and all adopt the smallest, which the choice then uses and its line names. One
// host (no round trip to subtract, so every call teaches a rate, however fast; its
// first call takes the ring, whose ranks all send more than plan::kMinRateSampleBytes:
// a rank without a value would make the agreement none); every call agrees (the
// fingerprint carries the algorithm).
TEST(AlgoChoice, TernaryCallsLearnTheRate) {
  EXPECT_EQ(RunRanks(Spec(3),
                     [](int rank, int n, const sieveUniqueId& id) {
                       sieveComm_t comm = nullptr;
                       RANK_CHECK(InitComm(rank, n, id, &comm) == 0, "%s",
                                  sieveGetLastError(nullptr));
                       for (uint64_t i = 0; i < 4; ++i)
                         if (Ternary(comm, 140001, 0, i) != 0) return 1;
                       RANK_CHECK(sieveCommDestroy(comm) == sieveSuccess, "destroy");
                       const std::string log = ReadOwnLog();
                       std::remove(OwnLogPath().c_str());
                       // The first call's: the tree rule of a LAN at the assumed rate,
                       // the rate unknown (a choice at the learned rate says so).
                       RANK_CHECK(Lines(log, {"allreduce-ternary of", "3 ranks: ring",
                                              "(rate unknown, assumed)"}) == 1,
                                  "first choice line:\n%s", log.c_str());
                       RANK_CHECK(Lines(log, {"allreduce-ternary of",
                                              "rate learned by this communicator"}) >= 1,
                                  "learned-rate line:\n%s", log.c_str());
                       return 0;
                     }),
            "");
}

// A dense call reads the rate the ternary calls taught (SIEVE_LINK_RATE unset): the
// same 40 KB all-reduce takes the ring at the assumed rate before any ternary call and
// the tree at the learned one after (8 Gbit/s, injected as every rank's measurement so
// that a loaded host cannot change it), and its line says which. Every rank reads the
// same agreed rate (the fingerprint carries the algorithm, so a rank that chose
// otherwise would fail the call).
TEST(AlgoChoice, DenseCallsReadTheLearnedRate) {
  EXPECT_EQ(RunRanks(Spec(3),
                     [](int rank, int n, const sieveUniqueId& id) {
                       sieveComm_t comm = nullptr;
                       RANK_CHECK(InitComm(rank, n, id, &comm) == 0, "%s",
                                  sieveGetLastError(nullptr));
                       sieve::Comm* impl = nullptr;
                       RANK_CHECK(sieve::CheckComm(comm, &impl).ok(), "no communicator");
                       impl->State<sieve::plan::LinkRate>().SetMeasuredForTest(1e9);
                       if (AllReduce(comm, 10000) != 0) return 1;
                       for (uint64_t i = 0; i < 4; ++i)
                         if (Ternary(comm, 140001, 0, i) != 0) return 1;
                       if (AllReduce(comm, 10000) != 0) return 1;
                       RANK_CHECK(sieveCommDestroy(comm) == sieveSuccess, "destroy");
                       const std::string log = ReadOwnLog();
                       std::remove(OwnLogPath().c_str());
                       RANK_CHECK(Lines(log, {"allreduce of 40000 bytes on 3 ranks: ring",
                                              "(rate unknown, assumed)"}) == 1,
                                  "dense line before:\n%s", log.c_str());
                       RANK_CHECK(Lines(log, {"allreduce of 40000 bytes on 3 ranks: tree",
                                              "rate learned by this communicator"}) == 1,
                                  "dense line after:\n%s", log.c_str());
                       return 0;
                     }),
            "");
}

// One host: SIEVE_ALGO=RING forces the ring even for a small call, and says so.
TEST(AlgoChoice, ForcedRingSaysSo) {
  EXPECT_EQ(RunRanks(Spec(3, {{"SIEVE_ALGO", "ring"}}),
                     [](int rank, int n, const sieveUniqueId& id) {
                       sieveComm_t comm = nullptr;
                       RANK_CHECK(InitComm(rank, n, id, &comm) == 0, "%s",
                                  sieveGetLastError(nullptr));
                       if (AllReduce(comm, 5) != 0 || AllReduce(comm, 5) != 0) return 1;
                       RANK_CHECK(sieveCommDestroy(comm) == sieveSuccess, "destroy");
                       const std::string log = ReadOwnLog();
                       std::remove(OwnLogPath().c_str());
                       RANK_CHECK(Lines(log, {"allreduce of 20 bytes on 3 ranks: ring",
                                              "SIEVE_ALGO=RING"}) == 1,
                                  "forced ring line:\n%s", log.c_str());
                       return 0;
                     }),
            "");
}

}  // namespace
}  // namespace sieve_test
