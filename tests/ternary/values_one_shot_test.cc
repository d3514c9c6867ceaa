// The one-shot of values as the plan chooses it (plan::ChooseTernaryAllReduce), with
// ranks as threads over the loopback transport on a stated 50 ms round trip: a call
// is a values call where every rank sent (n-1) x 4 bytes per element (its codes' plan
// sends a sixteenth of that). With the rate unknown a small call takes the values;
// with a learned rate too low for them, a call still does after 4 calls that lost, then
// after 8, 16, ... (a probe that changed nothing doubles the wait), and a stated rate
// (SIEVE_LINK_RATE) is never probed. Every call, whichever plan ran it, equals the
// single-process reference bit for bit.
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <string>
#include <vector>

#include "api/arg_check.h"
#include "plan/algo_choice.h"
#include "plan/link_rate.h"
#include "support/mp_harness.h"
#include "support/ternary_reference.h"
#include "support/thread_ranks.h"

namespace sieve_test {
namespace {

constexpr int kRanks = 3;
constexpr int kCalls = 37;
constexpr size_t kCount = 4096;  // 16 KiB of float32: values pay at 100 Mbit/s, not at 8
// Per rank, per call: whether it was a values call.
std::atomic<int> g_values[kRanks][kCalls];

int RankFn(int rank, int n, const sieveUniqueId& id) {
  sieveComm_t comm = nullptr;
  RANK_CHECK(InitComm(rank, n, id, &comm) == 0, "%s", sieveGetLastError(nullptr));
  sieve::Comm* impl = nullptr;
  RANK_CHECK(sieve::CheckComm(comm, &impl).ok(), "no communicator");
  for (int k = 0; k < kCalls; ++k) {
    // Calls 0-29 and 32-36 prove 8 Mbit/s, whatever they take: too slow for the values;
    // calls 30 and 31 prove 1 Gbit/s. Each change makes the window forget.
    if (k == 0 || k == 32) impl->State<sieve::plan::LinkRate>().SetMeasuredForTest(1e6);
    if (k == 30) impl->State<sieve::plan::LinkRate>().SetMeasuredForTest(1.25e8);
    TernaryCase c;
    c.input_seed = 70 + k;
    c.nranks = n;
    c.count = kCount;
    c.seed = 3;
    c.step = static_cast<uint64_t>(k);
    std::vector<char> in = TernaryCaseInput(c, rank), out(kCount * sizeof(float));
    sieveCounters_t before, after;
    RANK_CHECK(sieveCommGetCounters(comm, &before) == sieveSuccess, "counters");
    sieveTernaryParams_t params = TernaryParams(c.seed, c.step);
    RANK_CHECK(sieveAllReduceTernary(in.data(), out.data(), kCount, sieveFloat32, sieveSum,
                                     &params, comm, nullptr) == sieveSuccess,
               "call %d: %s", k, sieveGetLastError(comm));
    RANK_CHECK(sieveCommGetCounters(comm, &after) == sieveSuccess, "counters");
    const uint64_t sent = after.bytes_sent - before.bytes_sent;
    g_values[rank][k].store(sent >= (n - 1) * kCount * sizeof(float) ? 1 : 0);
    const std::vector<char> want = ExpectedTernary(c);
    RANK_CHECK(CountDifferent(sieveFloat32, out.data(), want.data(), kCount) == 0,
               "call %d (%s): differs from the reference", k,
               g_values[rank][k].load() ? "values" : "codes");
  }
  RANK_CHECK(sieveCommDestroy(comm) == sieveSuccess, "destroy");
  return 0;
}

std::string Pattern(int rank) {
  std::string p;
  for (int k = 0; k < kCalls; ++k) p += g_values[rank][k].load() ? 'V' : 'c';
  return p;
}

RankSpec Spec(std::vector<std::pair<std::string, std::string>> extra = {}) {
  RankSpec spec;
  spec.nranks = kRanks;
  spec.env = {{"SIEVE_TRANSPORT", "LOOPBACK"}, {"SIEVE_TIMEOUT", "60"},
              {"SIEVE_LINK_RTT", "0.05"}};
  for (auto& e : extra) spec.env.push_back(e);
  return spec;
}

TEST(ValuesOneShotTest, ALowLearnedRateIsProbedEveryFewCalls) {
  static_assert(sieve::plan::kValuesProbeFirst == 4, "the pattern below");
  EXPECT_EQ(RunThreadRanks(Spec(), RankFn), "");
  // Call 0: the rate unknown (assumed 100 Mbit/s), values. It agrees on 8 Mbit/s;
  // from then on the values lose, but the 4th such call probes them, then the 8th
  // after it, then the 16th. Calls 30-32 take the values on their merits (the rate
  // unknown, then 1 Gbit/s, then unknown again), so the wait starts again at 4.
  for (int r = 0; r < kRanks; ++r)
    EXPECT_EQ(Pattern(r), "V" "cccV" "cccccccV" "cccccccccccccccV" "c" "VV" "V" "cccV")
        << "rank " << r;
}

TEST(ValuesOneShotTest, AStatedRateIsNotProbed) {
  EXPECT_EQ(RunThreadRanks(Spec({{"SIEVE_LINK_RATE", "1m"}}), RankFn), "");
  for (int r = 0; r < kRanks; ++r) EXPECT_EQ(Pattern(r), std::string(kCalls, 'c')) << "rank " << r;
  EXPECT_EQ(RunThreadRanks(Spec({{"SIEVE_LINK_RATE", "1g"}}), RankFn), "");
  for (int r = 0; r < kRanks; ++r) EXPECT_EQ(Pattern(r), std::string(kCalls, 'V')) << "rank " << r;
}

}  // namespace
}  // namespace sieve_test
