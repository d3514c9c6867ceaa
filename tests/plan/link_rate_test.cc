// The communicator's one rate learner (plan/link_rate.h): one definition of a
// measurement, the smallest proposal agreed, the largest agreed bound of a window kept,
// and the test seam that freezes what a rank measures.
#include "plan/link_rate.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <vector>

namespace sieve::plan {
namespace {

constexpr double kGbit = 1e9 / 8;

RateSample Sample(algo::OpAlgo a, int n, uint64_t sent, double seconds, double one_way,
                  size_t segment = 0) {
  RateSample s;
  s.algo = a;
  s.nranks = n;
  s.segment_bytes = segment;
  s.sent = sent;
  s.seconds = seconds;
  s.one_way_s = one_way;
  return s;
}

// A measurement is the rate at which the algorithm's least time is the call's time.
TEST(LinkRateTest, AMeasurementInvertsTheLeastTimeOfTheCallsAlgorithm) {
  const uint64_t b = 4 << 20;
  const double a = 25e-3;
  for (algo::OpAlgo alg :
       {algo::OpAlgo::kRing, algo::OpAlgo::kTree, algo::OpAlgo::kDirect, algo::OpAlgo::kOneShot})
    for (int n : {2, 3, 4, 8})
      for (size_t seg : {size_t{0}, size_t{64} << 10})
        for (double slower : {1.0, 1.5, 4.0}) {
          const double at_1gbit = LeastSeconds(alg, n, static_cast<double>(b), kGbit, a, seg);
          const double seconds = at_1gbit * slower;
          const double r = RateBoundOf(Sample(alg, n, b, seconds, a, seg));
          if (slower == 1.0) {
            EXPECT_NEAR(r / kGbit, 1, 1e-6);
          }
          ASSERT_GT(r, 0) << static_cast<int>(alg) << " " << n << " " << slower;
          EXPECT_NEAR(LeastSeconds(alg, n, static_cast<double>(b), r, a, seg) / seconds, 1, 1e-6);
          // Never above: a bound errs low.
          EXPECT_GE(LeastSeconds(alg, n, static_cast<double>(b), r, a, seg), seconds * (1 - 1e-12));
        }
  // A ternary call's scales went first: one delay more, so a higher rate for one time.
  RateSample scales = Sample(algo::OpAlgo::kRing, 4, b, 0.5, a);
  scales.scales_first = true;
  const double r = RateBoundOf(scales);
  EXPECT_NEAR((a + LeastSeconds(algo::OpAlgo::kRing, 4, static_cast<double>(b), r, a)) / 0.5, 1,
              1e-6);
  EXPECT_GT(r, RateBoundOf(Sample(algo::OpAlgo::kRing, 4, b, 0.5, a)));
  // The direct exchange: its bytes over its time less a delay, or its sums' round trip.
  EXPECT_NEAR(LeastSeconds(algo::OpAlgo::kDirect, 4, 3e6, kGbit, 1e-3), 1e-3 + 3e6 / kGbit, 1e-12);
  EXPECT_NEAR(LeastSeconds(algo::OpAlgo::kDirect, 4, 3e5, kGbit, a), 2 * a + 2e5 / kGbit, 1e-12);
  // A wire-bound ring: its bytes over its time less one delay.
  EXPECT_NEAR(RateBoundOf(Sample(algo::OpAlgo::kRing, 4, b, a + 0.5, a)) / (b / 0.5), 1, 1e-6);
  // Within the delays alone, too few bytes, two kinds of link, no ranks to talk to: nothing.
  EXPECT_EQ(RateBoundOf(Sample(algo::OpAlgo::kDirect, 4, b, 2 * a, a)), 0);
  EXPECT_EQ(RateBoundOf(Sample(algo::OpAlgo::kRing, 4, kMinRateSampleBytes - 1, 1, 0)), 0);
  EXPECT_GT(RateBoundOf(Sample(algo::OpAlgo::kRing, 4, kMinRateSampleBytes, 1, 0)), 0);
  EXPECT_EQ(RateBoundOf(Sample(algo::OpAlgo::kRing, 1, b, 1, 0)), 0);
  RateSample mixed = Sample(algo::OpAlgo::kRing, 4, b, 1, 0);
  mixed.one_kind_of_link = false;
  EXPECT_EQ(RateBoundOf(mixed), 0);
}

// Whatever the kernels cost and however they overlap the wire, a ring call at rate r
// (on the rank that began first) takes at least its least time, so it proves at most r.
TEST(LinkRateTest, AMeasurementHoldsWhateverTheKernelsAndTheirOverlap) {
  const double r = kGbit, a = 25e-3;
  const uint64_t b = 4000000;
  const double least = LeastSeconds(algo::OpAlgo::kRing, 4, static_cast<double>(b), r, a);
  for (double kernels : {0.0, 1e-3, 0.1, 10.0})
    for (double t : {std::max(least, kernels + a), least + kernels}) {
      const double bound = RateBoundOf(Sample(algo::OpAlgo::kRing, 4, b, t, a));
      EXPECT_LE(bound, r * (1 + 1e-9)) << kernels;
      EXPECT_GT(bound, 0) << kernels;
    }
}

// A ring of n ranks at rate r that began at different times: a rank that began late
// found its first steps' bytes waiting and implies more than r; the earliest one cannot
// (all it receives was sent after it began), so the agreed smallest is a bound.
TEST(LinkRateTest, TheSmallestOverTheRanksIsABoundEvenWhereOneRankBeganLate) {
  const int n = 4;
  const double r = kGbit, a = 1e-3, sent = 6e6;
  const double step_s = sent / (2 * (n - 1)) / r;  // a step's chunk on the wire
  // The early ranks run every step on the wire; the late one began when its first
  // n - 1 steps' bytes were already there (it still waits for the rest).
  std::vector<float> proposals;
  for (int rank = 0; rank < n; ++rank) {
    const bool late = rank == n - 1;
    const double seconds = a + (late ? (n - 1) * step_s : 2 * (n - 1) * step_s);
    proposals.push_back(static_cast<float>(
        RateBoundOf(Sample(algo::OpAlgo::kRing, n, static_cast<uint64_t>(sent), seconds, a))));
  }
  EXPECT_GT(proposals.back(), 1.5 * r);  // one rank alone would claim twice the rate
  EXPECT_LE(AgreedBound(proposals), r * (1 + 1e-6));
  EXPECT_GE(AgreedBound(proposals), r * (1 - 1e-6));
}

TEST(LinkRateTest, RanksAgreeOnTheSmallestProposalAndNoneWhereARankHasNone) {
  EXPECT_EQ(AgreedBound({}), 0);
  EXPECT_EQ(AgreedBound({3e6f, 1e6f, 2e6f}), 1e6f);
  EXPECT_EQ(AgreedBound({3e6f, 0, 2e6f}), 0);
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  EXPECT_EQ(AgreedBound({3e6f, inf}), 0);
  EXPECT_EQ(AgreedBound({nan, 3e6f}), 0);
  EXPECT_EQ(AgreedBound({-1, 3e6f}), 0);
}

TEST(LinkRateTest, ARankProposesTheLargestValueSinceTheLastAgreement) {
  LinkRate learned;
  EXPECT_EQ(learned.proposal(), 0);
  learned.Offer(2e6);
  learned.Offer(5e6);
  learned.Offer(1e6);
  learned.Offer(std::numeric_limits<double>::infinity());
  EXPECT_EQ(learned.proposal(), 5e6);
  learned.Agreed(0);  // some rank had none: nothing adopted, the proposal starts anew
  EXPECT_EQ(learned.rate(), 0);
  EXPECT_EQ(learned.proposal(), 0);
  learned.Offer(4e6);
  learned.Agreed(3e6);
  EXPECT_EQ(learned.rate(), 3e6);
  EXPECT_EQ(learned.proposal(), 0);
}

// The weakness of a single measurement: a call on a starved CPU proves a low bound.
// The window keeps the largest agreed bound, so it does not lower the rate; a link that
// got slower is still followed once the older bounds leave the window.
TEST(LinkRateTest, AStarvedCallDoesNotLowerTheRateWhileABetterBoundIsInTheWindow) {
  LinkRate learned;
  EXPECT_EQ(learned.rate(), 0);
  learned.Agreed(1e6);  // a first call (TCP's windows starting): low
  EXPECT_EQ(learned.rate(), 1e6);
  learned.Agreed(3e6);
  EXPECT_EQ(learned.rate(), 3e6);
  learned.Agreed(2e5);  // a starved call: the link is still as fast
  EXPECT_EQ(learned.rate(), 3e6);
  for (size_t i = 0; i < LinkRate::kWindow - 1; ++i) learned.Agreed(5e5);
  EXPECT_EQ(learned.rate(), 5e5);  // 3e6 left the window
  learned.Agreed(4e5);
  EXPECT_EQ(learned.rate(), 5e5);
  for (size_t i = 0; i < LinkRate::kWindow; ++i) learned.Agreed(4e5);
  EXPECT_EQ(learned.rate(), 4e5);  // the link got slower: followed
}

TEST(LinkRateTest, TheTestSeamFreezesWhatARankMeasuresNotTheAgreement) {
  LinkRate learned;
  learned.Agreed(9e6);
  learned.SetMeasuredForTest(2e6);
  EXPECT_EQ(learned.rate(), 0);  // what was agreed before is forgotten
  EXPECT_EQ(learned.proposal(), 2e6);
  learned.Offer(7e6);  // the calls' own measurements do not count
  EXPECT_EQ(learned.proposal(), 2e6);
  learned.Agreed(1e6);  // another rank was given less: the smallest is adopted
  EXPECT_EQ(learned.rate(), 1e6);
  EXPECT_EQ(learned.proposal(), 2e6);
  learned.SetMeasuredForTest(0);  // nothing measured: agreements adopt none
  EXPECT_EQ(learned.rate(), 0);
  EXPECT_EQ(learned.proposal(), 0);
}

}  // namespace
}  // namespace sieve::plan
