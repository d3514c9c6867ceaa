// The auto policy (plan/compression_choice.h) over a table of (rate, kernel cost,
// size) -> choice on 4 ranks: compression where the link is slow, dense where the
// kernels cost more than the bytes save, a larger L where the kernels dominate
// and the extra bits cost under the slack; and the model's byte counts.
#include "plan/compression_choice.h"

#include <gtest/gtest.h>

namespace sieve::plan {
namespace {

constexpr double kMbit = 1e6 / 8, kGbit = 1e9 / 8;

CompressionInputs Inputs(double rate, double codec_s, size_t bytes, int n = 4) {
  CompressionInputs in;
  in.nranks = n;
  in.elements = bytes / 4;
  in.element_bytes = 4;
  in.link = Link{0, rate};
  in.codec_s_per_element = codec_s;
  in.dense_s_per_element = 0.5e-9;
  return in;
}

TEST(CompressionChoiceTest, TableOfRateKernelCostAndSize) {
  struct Row {
    double rate, codec_s;
    size_t bytes;
    int want;
  } const rows[] = {
      // A fast codec (8 ns/element): ternary below 10 Gbit/s, dense at 10 Gbit/s.
      {100 * kMbit, 8e-9, 64 << 10, 1},  {100 * kMbit, 8e-9, 1 << 20, 1},
      {100 * kMbit, 8e-9, 16 << 20, 1},  {1 * kGbit, 8e-9, 64 << 10, 1},
      {1 * kGbit, 8e-9, 1 << 20, 1},     {1 * kGbit, 8e-9, 16 << 20, 1},
      {10 * kGbit, 8e-9, 64 << 10, 0},   {10 * kGbit, 8e-9, 1 << 20, 0},
      {10 * kGbit, 8e-9, 16 << 20, 0},
      // A slow codec (30 ns/element, a loaded machine): at 1 Gbit/s the kernels
      // dominate, and L = 7 costs under 10% more than ternary for 1/36 of its variance.
      {100 * kMbit, 30e-9, 1 << 20, 1},  {1 * kGbit, 30e-9, 64 << 10, 7},
      {1 * kGbit, 30e-9, 1 << 20, 7},    {1 * kGbit, 30e-9, 16 << 20, 7},
      {10 * kGbit, 30e-9, 16 << 20, 0},
      // Free kernels: the fewest bytes.
      {10 * kGbit, 0, 16 << 20, 1},
      // Kernels so slow that nothing pays: dense even at 100 Mbit/s.
      {100 * kMbit, 1e-6, 1 << 20, 0},
  };
  for (const Row& r : rows) {
    CompressionChoice c = ChooseCompression(Inputs(r.rate, r.codec_s, r.bytes));
    EXPECT_EQ(c.levels, r.want) << r.rate * 8e-9 << " Gbit/s, " << r.codec_s * 1e9
                                << " ns/element, " << r.bytes << " bytes: " << c.why;
  }
}

TEST(CompressionChoiceTest, LevelsThatCostMoreKernelTimeLoseTheirSlack) {
  // The slow-codec row above chose L = 7 at 1 Gbit/s; where L >= 3 costs 1.8x ternary's
  // kernel time per element (this machine's probe says ~2x at L = 7), ternary wins.
  CompressionInputs in = Inputs(kGbit, 30e-9, 16 << 20);
  for (int i = 1; i < kNumAutoLevels; ++i) in.codec_factor[i] = 1.8;
  CompressionChoice c = ChooseCompression(in);
  EXPECT_EQ(c.levels, 1) << c.why;
  // Kernels free of a level's cost again: L = 7.
  in.codec_factor[AutoLevelIndex(7)] = 1.0;
  EXPECT_EQ(ChooseCompression(in).levels, 7);
  EXPECT_EQ(AutoLevelIndex(5), -1);
}

TEST(CompressionChoiceTest, TheChoiceIsWithinTheSlackOfTheFastest) {
  for (double rate : {100 * kMbit, kGbit, 10 * kGbit})
    for (double codec : {0.0, 8e-9, 30e-9, 1e-7})
      for (size_t bytes : {size_t{16} << 10, size_t{64} << 10, size_t{16} << 20}) {
        CompressionInputs in = Inputs(rate, codec, bytes);
        CompressionChoice c = ChooseCompression(in);
        double fastest = PredictSeconds(in, kAutoDense);
        for (int l : kAutoLevels) fastest = std::min(fastest, PredictSeconds(in, l));
        EXPECT_LE(c.predicted_s, fastest * (1 + kAccuracySlack) * (1 + 1e-12)) << c.why;
        EXPECT_DOUBLE_EQ(c.predicted_s, PredictSeconds(in, c.levels));
      }
}

TEST(CompressionChoiceTest, DenseWithoutARateOrWithoutPeers) {
  EXPECT_EQ(ChooseCompression(Inputs(0, 8e-9, 16 << 20)).levels, kAutoDense);
  EXPECT_NE(ChooseCompression(Inputs(0, 8e-9, 16 << 20)).why.find("SIEVE_LINK_RATE"),
            std::string::npos);
  EXPECT_EQ(ChooseCompression(Inputs(100 * kMbit, 8e-9, 16 << 20, 1)).levels, kAutoDense);
  EXPECT_EQ(ChooseCompression(Inputs(100 * kMbit, 8e-9, 0)).levels, kAutoDense);
  EXPECT_EQ(ChooseCompression(Inputs(100 * kMbit, 8e-9, kMinAutoElements * 4 - 4)).levels,
            kAutoDense);
  EXPECT_EQ(ChooseCompression(Inputs(100 * kMbit, 8e-9, kMinAutoElements * 4)).levels, 1);
}

TEST(CompressionChoiceTest, RingBytesFollowTheBitGrowth) {
  // 4 ranks, 8192 elements (chunks of 2048), block 2048 (4 scales to 3 peers):
  // ternary hops carry 2, 3, 3 bits, the all-gather 3 x 4 bits.
  CompressionInputs in = Inputs(kGbit, 0, 8192 * 4);
  EXPECT_DOUBLE_EQ(RingBytesSent(in, 1), 2048.0 * (2 + 3 + 3 + 3 * 4) / 8 + 4 * 4 * 3);
  // L = 7: 4, 5, 6 bits, then 3 x 6.
  EXPECT_DOUBLE_EQ(RingBytesSent(in, 7), 2048.0 * (4 + 5 + 6 + 3 * 6) / 8 + 4 * 4 * 3);
  EXPECT_DOUBLE_EQ(RingBytesSent(in, kAutoDense), 1.5 * 8192 * 4);
  EXPECT_EQ(LevelsName(kAutoDense), "dense");
  EXPECT_EQ(LevelsName(7), "q7");
}

}  // namespace
}  // namespace sieve::plan
