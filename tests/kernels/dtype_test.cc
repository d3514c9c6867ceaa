// Exhaustive and randomized checks of the float16/bfloat16 <-> float32 conversions in
// kernels/dtype.h against GCC's native _Float16 and an independent bfloat16 formula.
#include "kernels/dtype.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

namespace sieve::kernels {
namespace {

uint32_t Bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

float FromBits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

bool HalfIsNan(uint16_t h) { return (h & 0x7c00u) == 0x7c00u && (h & 0x3ffu) != 0; }

// What the compiler's own conversion (libgcc __truncsfhf2 / vcvtps2ph) produces.
uint16_t NativeHalf(float f) {
  _Float16 h = static_cast<_Float16>(f);
  uint16_t u;
  std::memcpy(&u, &h, 2);
  return u;
}

float NativeHalfToFloat(uint16_t u) {
  _Float16 h;
  std::memcpy(&h, &u, 2);
  return static_cast<float>(h);
}

void ExpectHalfMatchesNative(float f) {
  const uint16_t got = FloatToHalf(f);
  const uint16_t want = NativeHalf(f);
  if (std::isnan(f)) {
    EXPECT_TRUE(HalfIsNan(got)) << std::hex << Bits(f) << " -> " << got;
  } else {
    EXPECT_EQ(got, want) << "float bits 0x" << std::hex << Bits(f) << " (" << f << ")";
  }
}

TEST(DTypeTest, SizesAndNames) {
  EXPECT_EQ(DTypeSize(DType::kInt8), 1u);
  EXPECT_EQ(DTypeSize(DType::kBfloat16), 2u);
  EXPECT_EQ(DTypeSize(DType::kUint32), 4u);
  EXPECT_EQ(DTypeSize(DType::kFloat64), 8u);
  EXPECT_EQ(DTypeSize(static_cast<DType>(42)), 0u);
  EXPECT_STREQ(DTypeName(DType::kBfloat16), "bfloat16");
  EXPECT_STREQ(DTypeName(DType::kFloat32), "float32");
  EXPECT_STREQ(DTypeName(static_cast<DType>(-1)), "?");
  EXPECT_STREQ(RedOpName(RedOp::kAvg), "avg");
  EXPECT_STREQ(RedOpName(RedOp::kMin), "min");
  EXPECT_TRUE(IsFloating(DType::kFloat16));
  EXPECT_TRUE(IsFloating(DType::kBfloat16));
  EXPECT_FALSE(IsFloating(DType::kUint64));
}

// Every half value widens exactly (as the native conversion does) and narrows back to
// itself; NaNs stay NaN.
TEST(DTypeTest, HalfAllPatternsRoundTrip) {
  for (uint32_t h = 0; h < 0x10000u; ++h) {
    const uint16_t bits = static_cast<uint16_t>(h);
    const float f = HalfToFloat(bits);
    if (HalfIsNan(bits)) {
      ASSERT_TRUE(std::isnan(f)) << std::hex << h;
      ASSERT_TRUE(HalfIsNan(FloatToHalf(f))) << std::hex << h;
      continue;
    }
    ASSERT_EQ(Bits(f), Bits(NativeHalfToFloat(bits))) << std::hex << h;
    ASSERT_EQ(FloatToHalf(f), bits) << std::hex << h;
  }
}

TEST(DTypeTest, HalfHandPicked) {
  EXPECT_EQ(FloatToHalf(1.0f), 0x3c00);
  EXPECT_EQ(FloatToHalf(-2.0f), 0xc000);
  EXPECT_EQ(FloatToHalf(65504.0f), 0x7bff);
  EXPECT_EQ(FloatToHalf(65519.99f), 0x7bff);  // just below the halfway to 2^16
  EXPECT_EQ(FloatToHalf(65520.0f), 0x7c00);   // halfway, max half is odd -> inf
  EXPECT_EQ(FloatToHalf(1e30f), 0x7c00);
  EXPECT_EQ(FloatToHalf(-INFINITY), 0xfc00);
  EXPECT_EQ(FloatToHalf(1.0f + 0x1p-11f), 0x3c00);  // tie -> even
  EXPECT_EQ(FloatToHalf(1.0f + 0x3p-11f), 0x3c02);  // tie -> even (up)
  EXPECT_EQ(FloatToHalf(0x1p-24f), 0x0001);         // smallest subnormal
  EXPECT_EQ(FloatToHalf(0x1p-25f), 0x0000);         // tie between 0 and 2^-24 -> 0
  EXPECT_EQ(FloatToHalf(0x3p-25f), 0x0002);         // tie between 1 and 2 ulps -> 2
  EXPECT_EQ(FloatToHalf(-0.0f), 0x8000);
  EXPECT_EQ(FloatToHalf(0x1.ff8p-15f), 0x03ff);  // largest subnormal
  EXPECT_EQ(FloatToHalf(0x1.ffcp-15f), 0x0400);  // tie above it, odd -> min normal
  EXPECT_TRUE(HalfIsNan(FloatToHalf(NAN)));
}

// Random floats in and around half's range (subnormals, overflow), across all of
// float's range, and exact midpoints between neighbouring halves (plus one float ulp
// either side).
TEST(DTypeTest, FloatToHalfMatchesNative) {
  std::mt19937_64 rng(0x5eedf16);
  std::uniform_int_distribution<uint32_t> exp_near(95, 145);  // 2^-32 .. 2^18
  for (int i = 0; i < 2000000; ++i) {
    const uint32_t r = static_cast<uint32_t>(rng());
    const uint32_t near = (r & 0x807fffffu) | (exp_near(rng) << 23);
    ExpectHalfMatchesNative(FromBits(near));
    ExpectHalfMatchesNative(FromBits(static_cast<uint32_t>(rng())));
    if (HasFailure()) return;
  }
  for (uint32_t h = 0; h < 0x7c00u; ++h) {
    const float lo = HalfToFloat(static_cast<uint16_t>(h));
    const float hi = HalfToFloat(static_cast<uint16_t>(h + 1));      // 0x7c00 is +inf
    const float mid = h == 0x7bffu ? 65520.0f : lo + (hi - lo) / 2;  // exact in float
    for (float f : {mid, std::nextafter(mid, 0.0f), std::nextafter(mid, INFINITY)}) {
      ExpectHalfMatchesNative(f);
      ExpectHalfMatchesNative(-f);
    }
    if (HasFailure()) return;
  }
}

// Round to nearest even written as compare-the-discarded-half, not as the add trick.
uint16_t Bf16Oracle(uint32_t x) {
  uint32_t kept = x >> 16;
  const uint32_t dropped = x & 0xffffu;
  if (dropped > 0x8000u || (dropped == 0x8000u && (kept & 1u))) ++kept;
  return static_cast<uint16_t>(kept);
}

bool Bf16IsNan(uint16_t b) { return (b & 0x7f80u) == 0x7f80u && (b & 0x7fu) != 0; }

TEST(DTypeTest, Bf16AllPatternsRoundTrip) {
  for (uint32_t b = 0; b < 0x10000u; ++b) {
    const uint16_t bits = static_cast<uint16_t>(b);
    const float f = Bf16ToFloat(bits);
    ASSERT_EQ(Bits(f), b << 16);
    if (Bf16IsNan(bits)) {
      ASSERT_TRUE(Bf16IsNan(FloatToBf16(f))) << std::hex << b;
    } else {
      ASSERT_EQ(FloatToBf16(f), bits) << std::hex << b;
    }
  }
}

TEST(DTypeTest, Bf16RoundsToNearestEven) {
  std::mt19937_64 rng(0xbf16);
  for (int i = 0; i < 4000000; ++i) {
    uint32_t x = static_cast<uint32_t>(rng());
    if (i % 4 == 0) x = (x & 0xffff0000u) | 0x8000u;               // exact ties
    if (i % 4 == 1) x = (x & 0xffff0000u) | (0x7fffu + (x & 2u));  // ties +- 1
    if (std::isnan(FromBits(x))) {
      ASSERT_TRUE(Bf16IsNan(FloatToBf16(FromBits(x)))) << std::hex << x;
      continue;
    }
    ASSERT_EQ(FloatToBf16(FromBits(x)), Bf16Oracle(x)) << std::hex << x;
  }
  EXPECT_EQ(FloatToBf16(1.0f), 0x3f80);
  EXPECT_EQ(FloatToBf16(1.0f + 0x1p-8f), 0x3f80);             // tie, 0x3f80 even -> stays
  EXPECT_EQ(FloatToBf16(1.0f + 0x3p-8f), 0x3f82);             // tie, 0x3f81 odd -> up
  EXPECT_EQ(FloatToBf16(1.0f + 0x1p-8f + 0x1p-20f), 0x3f81);  // above the tie
  EXPECT_EQ(FloatToBf16(FromBits(0x7f7f8000u)), 0x7f80);      // tie at the top -> inf
  EXPECT_EQ(FloatToBf16(FromBits(0x7f7f7fffu)), 0x7f7f);
  EXPECT_EQ(FloatToBf16(FromBits(0xff7fffffu)), 0xff80);  // -max -> -inf
  EXPECT_EQ(FloatToBf16(FromBits(0x00018000u)), 0x0002);  // subnormal tie, odd -> up
  EXPECT_EQ(FloatToBf16(-INFINITY), 0xff80);
  EXPECT_TRUE(Bf16IsNan(FloatToBf16(FromBits(0x7f800001u))));  // signalling NaN stays NaN
}

}  // namespace
}  // namespace sieve::kernels
