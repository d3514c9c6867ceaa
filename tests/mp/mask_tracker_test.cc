// The mask tracker (SIEVE_AUTO_MASK=1): a buffer with a stable zero pattern is
// all-reduced dense for K steps, then masked (fewer bytes, same result); a step
// where one rank writes outside the mask is done dense and exact, and the mask
// is learned again. Every step is checked against the exact reference.
#include <gtest/gtest.h>

#include <cstdio>
#include <vector>

#include "support/mp_harness.h"

namespace sieve_test {
namespace {

constexpr size_t kCount = 100003;
constexpr int kSteps = 3;  // SIEVE_AUTO_MASK_STEPS

// Rank r's gradient at step s: non-zero where j % 10 < 3 (every rank) or
// j % 97 == r (rank-specific, so the agreed mask is a union); `stray` adds one
// non-zero outside every rank's pattern.
float Value(int r, size_t j, int step, bool stray) {
  bool kept = j % 10 < 3 || j % 97 == static_cast<size_t>(r);
  if (stray && j == 15) return 2.0f;  // 15 % 10 == 5, 15 % 97 == 15 >= nranks
  return kept ? static_cast<float>((j * 7 + r * 3 + step) % 4 + 1) : 0.0f;
}

int RunTracker(int rank, int n, const sieveUniqueId& id) {
  sieveComm_t comm = nullptr;
  RANK_CHECK(sieveCommInitRank(&comm, n, id, rank) == sieveSuccess, "%s",
             sieveGetLastError(nullptr));
  std::vector<float> buf(kCount);
  sieveCounters_t before{}, after{};
  uint64_t dense_bytes = 0, masked_bytes = 0;
  for (int step = 1; step <= 11; ++step) {
    bool stray_step = step == 6;
    for (size_t j = 0; j < kCount; ++j) buf[j] = Value(rank, j, step, stray_step && rank == 1);
    sieveCommGetCounters(comm, &before);
    RANK_CHECK(sieveAllReduce(buf.data(), buf.data(), kCount, sieveFloat32, sieveSum, comm,
                              nullptr) == sieveSuccess,
               "%s", sieveGetLastError(comm));
    sieveCommGetCounters(comm, &after);
    for (size_t j = 0; j < kCount; ++j) {
      float expect = 0;
      for (int r = 0; r < n; ++r) expect += Value(r, j, step, stray_step && r == 1);
      RANK_CHECK(buf[j] == expect, "step %d element %zu: %g, expected %g", step, j, buf[j], expect);
    }
    uint64_t sent = after.bytes_sent - before.bytes_sent;
    bool masked = after.masked_collectives > before.masked_collectives;
    // Steps 1-3 learn, 4-5 masked, 6 strays (dense), 7-9 relearn, 10-11 masked.
    bool expect_masked = (step >= 4 && step <= 5) || step >= 10;
    RANK_CHECK(masked == expect_masked, "step %d masked %d, expected %d", step, masked,
               expect_masked);
    if (step == 1) dense_bytes = sent;
    if (step == 4) masked_bytes = sent;
  }
  RANK_CHECK(after.dense_fallbacks == 1, "dense fallbacks %llu",
             (unsigned long long)after.dense_fallbacks);
  // About 31% of the elements are kept: a masked step moves well under half the bytes.
  RANK_CHECK(masked_bytes * 2 < dense_bytes, "masked step sent %llu bytes, dense %llu",
             (unsigned long long)masked_bytes, (unsigned long long)dense_bytes);
  std::fprintf(stderr, "rank %d: dense step %llu bytes, masked step %llu bytes\n", rank,
               (unsigned long long)dense_bytes, (unsigned long long)masked_bytes);
  RANK_CHECK(sieveCommDestroy(comm) == sieveSuccess, "destroy");
  return 0;
}

class MaskTrackerTest : public ::testing::TestWithParam<int> {};

TEST_P(MaskTrackerTest, StablePatternIsMaskedAndAStrayStepIsExact) {
  RankSpec spec;
  spec.nranks = GetParam();
  spec.env = {{"SIEVE_AUTO_MASK", "1"}, {"SIEVE_AUTO_MASK_STEPS", std::to_string(kSteps)}};
  EXPECT_EQ(RunRanks(spec, RunTracker), "");
}

INSTANTIATE_TEST_SUITE_P(Ranks, MaskTrackerTest, ::testing::Values(2, 3, 4));

// Without SIEVE_AUTO_MASK nothing is masked.
int RunUntracked(int rank, int n, const sieveUniqueId& id) {
  sieveComm_t comm = nullptr;
  RANK_CHECK(sieveCommInitRank(&comm, n, id, rank) == sieveSuccess, "%s",
             sieveGetLastError(nullptr));
  std::vector<float> buf(kCount);
  for (int step = 1; step <= 6; ++step) {
    for (size_t j = 0; j < kCount; ++j) buf[j] = Value(rank, j, step, false);
    RANK_CHECK(sieveAllReduce(buf.data(), buf.data(), kCount, sieveFloat32, sieveSum, comm,
                              nullptr) == sieveSuccess,
               "%s", sieveGetLastError(comm));
  }
  sieveCounters_t c{};
  sieveCommGetCounters(comm, &c);
  RANK_CHECK(c.masked_collectives == 0, "masked %llu", (unsigned long long)c.masked_collectives);
  RANK_CHECK(sieveCommDestroy(comm) == sieveSuccess, "destroy");
  return 0;
}

TEST(MaskTrackerTest, OffByDefault) {
  RankSpec spec;
  spec.nranks = 2;
  EXPECT_EQ(RunRanks(spec, RunUntracked), "");
}

}  // namespace
}  // namespace sieve_test
