// Auto levels (ternary/auto_levels.h) with ranks as threads over the loopback
// transport: ranks fed different local measurements (the test hooks: auto's for the
// stated rate and the kernels, the communicator's rate learner's for the bound its
// calls prove) still make one choice, the one plan::ChooseCompression makes from the
// slowest rank's inputs, and the result is bit for bit that of the fixed mode chosen
// (sieveAllReduceQuantized at that L, or sieveAllReduce); every rank holds the same
// learned rate, the one the algorithm choice reads; each change of the choice is
// logged at INFO.
#include "ternary/auto_levels.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "api/arg_check.h"
#include "plan/compression_choice.h"
#include "plan/link_rate.h"
#include "support/log_capture.h"
#include "support/thread_ranks.h"

namespace sieve_test {
namespace {

using sieve::ternary::AutoMeasurements;

constexpr int kRanks = 3;
constexpr size_t kCount = 1 << 16;  // 256 KiB of float32
constexpr double kMbit = 1e6 / 8, kGbit = 1e9 / 8;

// Per scenario, per rank: what the rank measured. Each scenario is chosen so
// that some rank alone would choose otherwise than the slowest inputs say.
const AutoMeasurements kScenarios[][kRanks] = {
    // The rate not known on any rank, nothing measured (the communicator's first auto
    // call, as without SIEVE_LINK_RATE): the most compressed level, not dense.
    {{0, 8e-9, 0.5e-9}, {0, 8e-9, 0.5e-9}, {0, 8e-9, 0.5e-9}},
    // Slowest rate 100 Mbit/s: ternary; rank 1 alone (10 Gbit/s) would go dense.
    {{100 * kMbit, 8e-9, 0.5e-9}, {10 * kGbit, 8e-9, 0.5e-9}, {10 * kGbit, 1e-9, 0.5e-9}},
    // Slow kernels on rank 2 make the kernels dominate at 1 Gbit/s: a larger L;
    // ranks 0 and 1 alone (fast kernels) would stay ternary.
    {{kGbit, 8e-9, 0.5e-9}, {kGbit, 4e-9, 0.5e-9}, {kGbit, 30e-9, 0.5e-9}},
    // One rank at 100 Mbit/s (with the fastest codec), one with slow dense kernels:
    // the slowest of each, ternary; ranks 0 and 2 alone would go dense.
    {{10 * kGbit, 8e-9, 0.5e-9}, {100 * kMbit, 1e-9, 0.5e-9}, {10 * kGbit, 8e-9, 5e-9}},
    // 10 Gbit/s on every rank: dense.
    {{10 * kGbit, 8e-9, 0.5e-9}, {10 * kGbit, 2e-9, 0.5e-9}, {10 * kGbit, 8e-9, 0.1e-9}},
    // The rate not stated, lower bounds proven (kBounds): the smallest (1 Gbit/s)
    // decides, ternary; ranks 1 and 2 alone (10 Gbit/s) would go dense. The exploration
    // budget (a tenth of the bytes of the calls so far) stays below a dense call's extra
    // bytes here.
    {{0, 8e-9, 0.5e-9}, {0, 8e-9, 0.5e-9}, {0, 8e-9, 0.5e-9}},
    // Bounds of 10 Gbit/s and more on every rank: dense at the bound (auto reads the
    // communicator's learner; it did not, and stayed at q1).
    {{0, 8e-9, 0.5e-9}, {0, 8e-9, 0.5e-9}, {0, 8e-9, 0.5e-9}},
};
constexpr int kNumScenarios = sizeof(kScenarios) / sizeof(kScenarios[0]);
// Per scenario, per rank: the bound on the rate the rank's calls proved (the rate
// learner's test seam; its own calls then teach it nothing, so the fixed-mode ternary
// calls between the auto ones do not move it).
const double kBounds[kNumScenarios][kRanks] = {
    {}, {}, {}, {}, {}, {kGbit, 10 * kGbit, 10 * kGbit}, {20 * kGbit, 10 * kGbit, 40 * kGbit}};

std::atomic<int> g_chosen[kNumScenarios][kRanks];
std::atomic<double> g_learned[kNumScenarios][kRanks];

// This executable logs at INFO (COLL only); the logger reads it on first use.
const bool kInfo = [] {
  setenv("SIEVE_DEBUG", "INFO", 1);
  setenv("SIEVE_DEBUG_SUBSYS", "COLL", 1);
  return true;
}();

// The choice from the slowest inputs (the agreement's max of 1/rate and costs).
int Expected(int scenario) {
  sieve::plan::CompressionInputs in;
  in.nranks = kRanks;
  in.elements = kCount;
  in.link.rate_Bps = 1e300;
  in.rate_lower_Bps = 1e300;
  for (double bound : kBounds[scenario]) in.rate_lower_Bps = std::min(in.rate_lower_Bps, bound);
  for (const AutoMeasurements& m : kScenarios[scenario]) {
    in.link.rate_Bps = std::min(in.link.rate_Bps, m.rate_Bps);
    in.codec_s_per_element = std::max(in.codec_s_per_element, m.codec_s_per_element);
    in.dense_s_per_element = std::max(in.dense_s_per_element, m.dense_s_per_element);
  }
  return sieve::plan::ChooseCompression(in).levels;
}

int Alone(int scenario, int rank) {
  sieve::plan::CompressionInputs in;
  in.nranks = kRanks;
  in.elements = kCount;
  const AutoMeasurements& m = kScenarios[scenario][rank];
  in.link.rate_Bps = m.rate_Bps;
  in.rate_lower_Bps = kBounds[scenario][rank];
  in.codec_s_per_element = m.codec_s_per_element;
  in.dense_s_per_element = m.dense_s_per_element;
  return sieve::plan::ChooseCompression(in).levels;
}

int RankFnAuto(int rank, int n, const sieveUniqueId& id) {
  sieveComm_t comm = nullptr;
  RANK_CHECK(InitComm(rank, n, id, &comm) == 0, "%s", sieveGetLastError(nullptr));
  sieve::Comm* impl = nullptr;
  RANK_CHECK(sieve::CheckComm(comm, &impl).ok(), "no communicator");
  std::vector<float> in(kCount), out_auto(kCount), out_fixed(kCount);
  for (size_t i = 0; i < kCount; ++i)
    in[i] = static_cast<float>(((i * 7919 + rank * 104729) % 2001)) * 1e-3f - 1.0f;
  // Each scenario's call agrees anew (the test hook asks for it).
  for (int sc = 0; sc < kNumScenarios; ++sc) {
    sieve::ternary::SetAutoMeasurementsForTest(*impl, kScenarios[sc][rank]);
    impl->State<sieve::plan::LinkRate>().SetMeasuredForTest(kBounds[sc][rank]);
    sieveTernaryParams_t params{11, static_cast<uint64_t>(sc), 0, nullptr, 0};
    RANK_CHECK(sieveAllReduceQuantized(in.data(), out_auto.data(), kCount, sieveFloat32, sieveAvg,
                                       SIEVE_LEVELS_AUTO, &params, comm, nullptr) == sieveSuccess,
               "auto: %s", sieveGetLastError(comm));
    int levels = -2;
    RANK_CHECK(sieveCommGetAutoLevels(comm, &levels) == sieveSuccess, "%s",
               sieveGetLastError(comm));
    g_chosen[sc][rank].store(levels);
    g_learned[sc][rank].store(impl->State<sieve::plan::LinkRate>().rate());
    sieveResult_t r =
        levels == SIEVE_LEVELS_DENSE
            ? sieveAllReduce(in.data(), out_fixed.data(), kCount, sieveFloat32, sieveAvg, comm,
                             nullptr)
            : sieveAllReduceQuantized(in.data(), out_fixed.data(), kCount, sieveFloat32, sieveAvg,
                                      levels, &params, comm, nullptr);
    RANK_CHECK(r == sieveSuccess, "fixed %d: %s", levels, sieveGetLastError(comm));
    RANK_CHECK(std::memcmp(out_auto.data(), out_fixed.data(), kCount * sizeof(float)) == 0,
               "scenario %d: auto's result differs from levels %d's", sc, levels);
  }
  sieveCommDestroy(comm);
  return 0;
}

TEST(AutoLevelsTest, RanksWithDifferentMeasurementsMakeOneChoiceBitIdenticalToIt) {
  for (int sc = 0; sc < kNumScenarios; ++sc) {
    bool some_rank_differs = false;
    for (int r = 0; r < kRanks; ++r) some_rank_differs |= Alone(sc, r) != Expected(sc);
    EXPECT_TRUE(some_rank_differs || sc == 0 || sc == 4 || sc == 6)
        << "scenario " << sc << " does not test the agreement";
  }
  EXPECT_EQ(Expected(0), 1);  // dense before the rate was known (it failed so)
  EXPECT_EQ(Expected(1), 1);
  EXPECT_GT(Expected(2), 1);
  EXPECT_EQ(Expected(4), sieve::plan::kAutoDense);
  EXPECT_EQ(Expected(5), 1);
  EXPECT_EQ(Expected(6), sieve::plan::kAutoDense);
  int switches = 0;
  for (int sc = 1; sc < kNumScenarios; ++sc) switches += Expected(sc) != Expected(sc - 1);
  ASSERT_TRUE(kInfo);
  LogCapture log;
  RankSpec spec;
  spec.nranks = kRanks;
  spec.env = {{"SIEVE_TRANSPORT", "LOOPBACK"}, {"SIEVE_TIMEOUT", "60"}};
  EXPECT_EQ(RunThreadRanks(spec, RankFnAuto), "");
  for (int sc = 0; sc < kNumScenarios; ++sc)
    for (int r = 0; r < kRanks; ++r)
      EXPECT_EQ(g_chosen[sc][r].load(), Expected(sc)) << "scenario " << sc << " rank " << r;
  // One agreed bound on every rank (the smallest), in the learner the algorithm choice
  // reads too.
  for (int r = 0; r < kRanks; ++r) {
    EXPECT_EQ(g_learned[5][r].load(), kGbit) << "rank " << r;
    EXPECT_EQ(g_learned[6][r].load(), 10 * kGbit) << "rank " << r;
    EXPECT_EQ(g_learned[0][r].load(), 0) << "rank " << r;
  }
  // One line per rank for the first choice and for each switch
  // (q1 -> qL -> q1 -> dense -> q1 -> dense).
  EXPECT_EQ(log.Count("auto: all-reduce of 65536 elements"), kRanks * (1 + switches));
  EXPECT_EQ(log.Count("q1 -> q"), kRanks);
  EXPECT_EQ(log.Count("dense -> q1 (rate not known, at its lower bound"), kRanks);
}

// A peer that comes late to a quantized call (still computing, or descheduled) makes
// the others wait; that wait is not their kernels' cost, since a dense call would wait
// as long. Rank 2 sleeps 300 ms before auto calls: the codec cost the other ranks
// learn stays near what the kernels take (a 300 ms wait over this call's elements
// would read as ~1.1 us per element, auto would turn dense for good). Only calls that
// do not agree (the 5th on): an agreement, before the call, would absorb the wait.
std::atomic<double> g_learned_codec[kRanks];
constexpr size_t kLateCount = 1 << 18;  // its codes are over plan::kMinRateSampleBytes
constexpr int kLateCalls = 8;

int RankFnLatePeer(int rank, int n, const sieveUniqueId& id) {
  sieveComm_t comm = nullptr;
  RANK_CHECK(InitComm(rank, n, id, &comm) == 0, "%s", sieveGetLastError(nullptr));
  sieve::Comm* impl = nullptr;
  RANK_CHECK(sieve::CheckComm(comm, &impl).ok(), "no communicator");
  std::vector<float> in(kLateCount), out(kLateCount);
  for (size_t i = 0; i < kLateCount; ++i)
    in[i] = static_cast<float>(((i * 7919 + rank * 104729) % 2001)) * 1e-3f - 1.0f;
  for (int k = 0; k < kLateCalls; ++k) {
    if (rank == 2 && k >= 5) usleep(300 * 1000);
    sieveTernaryParams_t params{11, static_cast<uint64_t>(k), 0, nullptr, 0};
    RANK_CHECK(sieveAllReduceQuantized(in.data(), out.data(), kLateCount, sieveFloat32, sieveAvg,
                                       SIEVE_LEVELS_AUTO, &params, comm, nullptr) == sieveSuccess,
               "auto: %s", sieveGetLastError(comm));
    int levels = -2;
    RANK_CHECK(sieveCommGetAutoLevels(comm, &levels) == sieveSuccess, "%s",
               sieveGetLastError(comm));
    RANK_CHECK(levels != SIEVE_LEVELS_DENSE, "call %d went dense", k);
  }
  g_learned_codec[rank].store(sieve::ternary::AutoLocalMeasurements(*impl).codec_s_per_element);
  sieveCommDestroy(comm);
  return 0;
}

TEST(AutoLevelsTest, WaitingForALatePeerIsNotCountedAsKernelTime) {
  RankSpec spec;
  spec.nranks = kRanks;
  // A slow stated link (10 MB/s): the quantized levels pay.
  spec.env = {{"SIEVE_TRANSPORT", "LOOPBACK"}, {"SIEVE_TIMEOUT", "60"}, {"SIEVE_LINK_RATE", "10m"}};
  EXPECT_EQ(RunThreadRanks(spec, RankFnLatePeer), "");
  for (int r = 0; r < kRanks; ++r) {
    const double per_element = g_learned_codec[r].load();
    EXPECT_GT(per_element, 0) << "rank " << r;
    // The kernels here take a few ns per element (tens under sanitizers); the wait
    // alone would add 300 ms / 262144 = 1.1 us.
    EXPECT_LT(per_element, 0.5e-6) << "rank " << r;
  }
}

}  // namespace
}  // namespace sieve_test
