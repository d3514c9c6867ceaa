// The plan's link model (plan/link_model.h): its estimates match the issue's
// arithmetic, a round trip below 2 ms leaves the choice to the LAN's size rule,
// latency picks the direct exchange (the one-shot for small calls where the
// codec has one), and the bytes in flight cover the
// bandwidth-delay product within their bounds.
#include "plan/link_model.h"

#include <gtest/gtest.h>

#include <limits>

#include "plan/algo_choice.h"

namespace sieve::plan {
namespace {

constexpr double kGbit = 1e9 / 8, kMbit = 1e6 / 8;

TEST(LinkModelTest, EstimatesFollowTheIssuesArithmetic) {
  // 4 ranks, 16 MiB at 1 Gbit/s, 50 ms RTT: the direct exchange's estimate (the
  // physical limit with latency) is 251 ms.
  AllReduceEstimate e = EstimateAllReduce(4, 16 << 20, Link{0.05, kGbit});
  EXPECT_NEAR(e.direct_s, 0.2513, 1e-3);
  // The tree on 4 ranks has 2 levels: 4 one-way delays and 3 x the bytes.
  EXPECT_NEAR(e.tree_s, 4 * 0.025 + 3.0 * (16 << 20) / kGbit, 1e-9);
  // With the rate unknown the ring keeps its bound, 2(n-1) delays plus the bytes
  // (at the 100 Mbit/s assumed for the choice).
  e = EstimateAllReduce(4, 16 << 20, Link{0.05, 0});
  EXPECT_NEAR(e.ring_s, 6 * 0.025 + 1.5 * (16 << 20) / (100 * kMbit), 1e-9);
}

TEST(LinkModelTest, AKnownRateGivesThePipelinedRing) {
  // Chunks that take longer than a delay (16 MiB at 1 Gbit/s: 33.6 ms a step)
  // keep the link busy: the bytes plus one delay, 226 ms against the bound's 351.
  AllReduceEstimate e = EstimateAllReduce(4, 16 << 20, Link{0.05, kGbit});
  EXPECT_NEAR(e.ring_s, 1.5 * (16 << 20) / kGbit + 0.025, 1e-9);
  // 16 MiB ternary at 100 Mbit/s (2 MiB of 4-bit sums, 64 KiB segments): 277 ms
  // (measured: 275 ms of data), against the bound's 402.
  const size_t seg = 64 << 10;
  e = EstimateAllReduce(4, 2 << 20, Link{0.05, 100 * kMbit}, seg);
  EXPECT_NEAR(e.ring_s, 1.5 * (2 << 20) / (100 * kMbit) + 0.025, 1e-9);
  // Chunks shorter than a delay plus a segment (1 MiB: 21 ms): each step waits
  // for the previous one's first segment.
  e = EstimateAllReduce(4, 1 << 20, Link{0.05, 100 * kMbit}, seg);
  const double chunk = (1 << 20) / 4.0 / (100 * kMbit), t = seg / (100 * kMbit);
  EXPECT_NEAR(e.ring_s, 5 * (0.025 + t) + chunk + 0.025, 1e-9);
}

TEST(LinkModelTest, OnALanTheTreeOnlyWhereItsExtraBytesAreCheap) {
  const size_t b = 64 << 10;
  EXPECT_FALSE(TreeOnLan(4, b, Link{0, 100 * kMbit}));  // 8 ms more on the wire
  EXPECT_FALSE(TreeOnLan(4, b, Link{0, 0}));  // the rate unknown: judged at kChoiceRateBps
  EXPECT_TRUE(TreeOnLan(4, 1 << 10, Link{0, 0}));
  EXPECT_FALSE(TreeOnLan(4, b, Link{0, 50 * kMbit}));
  EXPECT_TRUE(TreeOnLan(4, b, Link{0, kGbit}));  // 0.8 ms more: within the margin
  EXPECT_TRUE(TreeOnLan(4, b, Link{0, 10 * kGbit}));
  EXPECT_TRUE(TreeOnLan(4, 1 << 10, Link{0, 100 * kMbit}));
}

TEST(LinkModelTest, BelowTwoMillisecondsTheLinkIsLocal) {
  for (double rtt : {0.0, 1e-4, 1.9e-3}) EXPECT_FALSE(LatencyMatters(Link{rtt, kGbit})) << rtt;
  for (double rtt : {2e-3, 0.05}) EXPECT_TRUE(LatencyMatters(Link{rtt, 0})) << rtt;
}

TEST(LinkModelTest, LatencyPicksTheDirectExchange) {
  std::string why;
  const Link wan{0.05, kGbit};
  EXPECT_EQ(ChooseForLink(4, 64 << 10, wan, &why), algo::OpAlgo::kDirect);
  EXPECT_EQ(ChooseForLink(4, 2 << 20, wan, &why), algo::OpAlgo::kDirect);
  EXPECT_NE(why.find("round trip 50 ms"), std::string::npos) << why;
  // Where a step's chunk outlasts a delay the pipelined ring pays one delay and
  // the direct exchange two (16 MiB at 1 Gbit/s: dense measured 267 ms on the ring,
  // 94% of the limit; 16 MiB ternary at 100 Mbit/s: 312 ms against 420-690).
  EXPECT_EQ(ChooseForLink(4, 16 << 20, wan, &why), algo::OpAlgo::kRing);
  EXPECT_EQ(ChooseForLink(4, 2 << 20, Link{0.05, 100 * kMbit}, &why, 0, 64 << 10),
            algo::OpAlgo::kRing);
  // Two ranks: the ring already pays two delays, so it stays.
  EXPECT_EQ(ChooseForLink(2, 16 << 20, wan, &why), algo::OpAlgo::kRing);
  // Where the bytes dominate, saving 2(n-2) delays is under 10%: the ring stays.
  EXPECT_EQ(ChooseForLink(4, 1 << 30, Link{0.01, 100 * kMbit}, &why), algo::OpAlgo::kRing);
  // An unknown rate is taken as slow (100 Mbit/s) for the choice: the direct
  // exchange where latency dominates even there, the ring for 16 MiB.
  EXPECT_EQ(ChooseForLink(4, 64 << 10, Link{0.05, 0}, &why), algo::OpAlgo::kDirect);
  EXPECT_EQ(ChooseForLink(4, 4 << 20, Link{0.05, 0}, &why), algo::OpAlgo::kDirect);
  EXPECT_EQ(ChooseForLink(4, 16 << 20, Link{0.05, 0}, &why), algo::OpAlgo::kRing);
  EXPECT_NE(why.find("assumed 0.1 Gbit/s"), std::string::npos) << why;
}

TEST(LinkModelTest, TheOneShotPaysOneDelayForMoreBytes) {
  // 4 ranks, 64 KiB at 1 Gbit/s, 50 ms RTT: one delay plus 3 x 64 KiB on the wire.
  const Link wan{0.05, kGbit};
  AllReduceEstimate e = EstimateAllReduce(4, 64 << 10, wan);
  EXPECT_NEAR(e.one_shot_s, 0.025 + 3.0 * (64 << 10) / kGbit, 1e-9);
  EXPECT_NEAR(e.direct_s, 0.05 + 1.5 * (64 << 10) / kGbit, 1e-9);
}

// The ternary one-shot goes in segments and sends its codes (half the 4-rank sums'
// bits): 16 MiB of float32 on 4 ranks is 1 MiB of codes per peer against 2 MiB
// of sums. At 1 Gbit/s and 50 ms it pays one delay fewer than the direct exchange
// for 0.75 MiB more per rank (6 ms): chosen; at 100 Mbit/s those bytes cost 63 ms
// (not chosen, nor with the rate unknown); never beyond kMaxOneShotBytes of copies.
TEST(LinkModelTest, TheSegmentedOneShotTakesLargeCompressedCallsOnFastLongLinks) {
  std::string why;
  const size_t sums = 2 << 20, codes = 1 << 20, seg = 64 << 10;
  const AllReduceEstimate e = EstimateAllReduce(4, sums, Link{0.05, kGbit}, seg, codes);
  EXPECT_NEAR(e.one_shot_s, 0.025 + 3.0 * codes / kGbit, 1e-9);
  EXPECT_NEAR(e.direct_s, 0.05 + 1.5 * sums / kGbit, 1e-9);
  EXPECT_EQ(ChooseForLink(4, sums, Link{0.05, kGbit}, &why, 0, seg, codes),
            algo::OpAlgo::kOneShot);
  EXPECT_NE(why.find("one-shot"), std::string::npos) << why;
  // Without the image size (the whole-message one-shot, at most a segment): as before.
  EXPECT_EQ(ChooseForLink(4, sums, Link{0.05, kGbit}, &why, seg, seg), algo::OpAlgo::kDirect);
  EXPECT_NE(ChooseForLink(4, sums, Link{0.05, 100 * kMbit}, &why, 0, seg, codes),
            algo::OpAlgo::kOneShot);
  // At 200 Mbit/s its 0.75 MiB more take 31 ms against the direct exchange's real
  // bytes (codes one way, sums the other), more than the 25 ms delay it saves.
  EXPECT_NE(ChooseForLink(4, sums, Link{0.05, 200 * kMbit}, &why, 0, seg, codes),
            algo::OpAlgo::kOneShot);
  EXPECT_EQ(ChooseForLink(4, sums, Link{0.05, 500 * kMbit}, &why, 0, seg, codes),
            algo::OpAlgo::kOneShot);
  EXPECT_NE(ChooseForLink(4, sums, Link{0.05, 0}, &why, 0, seg, codes), algo::OpAlgo::kOneShot);
  EXPECT_NE(ChooseForLink(4, 8 * sums, Link{0.05, kGbit}, &why, 0, seg, 8 * codes),
            algo::OpAlgo::kOneShot);
}

TEST(LinkModelTest, LatencyPicksTheOneShotForSmallCallsWhereTheCodecHasOne) {
  std::string why;
  const Link wan{0.05, kGbit};
  const size_t seg = 512 << 10;
  EXPECT_EQ(ChooseForLink(4, 64 << 10, wan, &why, seg), algo::OpAlgo::kOneShot);
  EXPECT_NE(why.find("one-shot 26.6 ms"), std::string::npos) << why;
  EXPECT_EQ(ChooseForLink(2, 4 << 10, wan, &why, seg), algo::OpAlgo::kOneShot);
  // Not offered (a codec without one, or 0): the direct exchange as before.
  EXPECT_EQ(ChooseForLink(4, 64 << 10, wan, &why, 0), algo::OpAlgo::kDirect);
  EXPECT_EQ(why.find("one-shot"), std::string::npos) << why;
  // One message per peer, at most a segment (eager, no rendezvous round trip).
  EXPECT_EQ(ChooseForLink(4, seg, wan, &why, seg), algo::OpAlgo::kOneShot);
  EXPECT_EQ(ChooseForLink(4, seg + 1, wan, &why, seg), algo::OpAlgo::kDirect);
  // Its copies of every peer's input stay within kMaxOneShotBytes.
  EXPECT_EQ(ChooseForLink(64, 256 << 10, wan, &why, seg), algo::OpAlgo::kDirect);
  // Where the extra bytes cost more than the delay saved: 4 ranks at 100 Mbit/s
  // (the rate assumed when unknown), 512 KiB: 1.5 x 512 KiB takes 63 ms > 25 ms.
  EXPECT_EQ(ChooseForLink(4, 64 << 10, Link{0.05, 0}, &why, seg), algo::OpAlgo::kOneShot);
  EXPECT_EQ(ChooseForLink(4, seg, Link{0.05, 0}, &why, seg), algo::OpAlgo::kDirect);
}

// The quantized one-shot of values: one delay and 4 bytes per element to every peer,
// against the scales' delay and the codes' plan. 4 ranks, 50 ms RTT: at 1 Gbit/s it
// pays up to ~0.85 MiB of float32 (220k elements), at 100 Mbit/s up to ~85 KiB, and
// never beyond kMaxOneShotBytes of copies.
TEST(LinkModelTest, TheOneShotOfValuesPaysForSmallCallsOnLongLinks) {
  std::string why;
  auto pays = [&](int n, size_t elems, const Link& link, double* values_s = nullptr) {
    double codes_s = 0, v = 0;
    const size_t codes = (elems + 3) / 4, sums = (elems * 3 + 7) / 8;  // 2- and 3-bit images
    ChooseForLink(n, sums, link, &why, 0, 64 << 10, codes, &codes_s);
    const bool yes = ValuesOneShotPays(n, (elems + 1) * 4, link, codes_s, &v);
    if (values_s != nullptr) *values_s = v;
    return yes;
  };
  const Link gbit{0.05, kGbit}, mbit100{0.05, 100 * kMbit};
  double values_s = 0;
  EXPECT_TRUE(pays(4, 16 << 10, gbit, &values_s));  // 64 KiB of float32
  EXPECT_NEAR(values_s, 0.025 + 3.0 * ((16 << 10) + 1) * 4 / kGbit, 1e-9);
  EXPECT_TRUE(pays(4, 200000, gbit));
  EXPECT_FALSE(pays(4, 240000, gbit));
  EXPECT_FALSE(pays(4, 4 << 20, gbit));  // 16 MiB
  EXPECT_TRUE(pays(4, 16 << 10, mbit100));
  EXPECT_TRUE(pays(4, 20000, mbit100));
  EXPECT_FALSE(pays(4, 24000, mbit100));
  // The rate unknown: the one assumed for choices (100 Mbit/s).
  EXPECT_TRUE(pays(4, 20000, Link{0.05, 0}));
  EXPECT_FALSE(pays(4, 24000, Link{0.05, 0}));
  // Copies within kMaxOneShotBytes: 64 ranks of 64 KiB of values would hold 4 MiB x 63.
  EXPECT_FALSE(pays(64, 1 << 20, Link{0.05, 100 * kGbit}));
}

TEST(LinkModelTest, InflightCoversTheBandwidthDelayProduct) {
  const size_t seg = 512 << 10;
  EXPECT_EQ(InflightBytes(Link{0, 0}, seg), kMinInflightBytes);  // a LAN: as before
  EXPECT_EQ(InflightBytes(Link{1e-4, 10 * kGbit}, seg), kMinInflightBytes);
  // 1 Gbit/s x 50 ms = 6.25 MB, plus two segments.
  EXPECT_EQ(InflightBytes(Link{0.05, kGbit}, seg), static_cast<size_t>(0.05 * kGbit) + 2 * seg);
  EXPECT_EQ(InflightBytes(Link{0.05, 100 * kMbit}, seg), kMinInflightBytes);  // 625 KB
  EXPECT_EQ(InflightBytes(Link{1.0, 100 * kGbit}, seg), kMaxInflightBytes);
  // Unknown rate: a fast one is assumed (memory is the only cost).
  EXPECT_EQ(InflightBytes(Link{0.05, 0}, seg),
            static_cast<size_t>(0.05 * kAssumedRateBps) + 2 * seg);
}

TEST(LinkModelTest, ScalesGoInOneExchangeWhereTheirCopiesAreSmall) {
  const Link wan{0.05, kGbit}, lan{1e-4, kGbit};
  EXPECT_TRUE(ScalesInOneExchange(4, 8 << 10, wan));  // 16 MiB float32 in blocks of 2048
  EXPECT_TRUE(ScalesInOneExchange(4, 8 << 10, lan));  // a LAN too: pipelined with the ring
  EXPECT_FALSE(ScalesInOneExchange(1, 8 << 10, wan));
  EXPECT_TRUE(ScalesInOneExchange(5, kOneExchangeBytes / 4, wan));
  EXPECT_FALSE(ScalesInOneExchange(5, kOneExchangeBytes / 4 + 1, wan));  // too many copies
}

}  // namespace
}  // namespace sieve::plan
