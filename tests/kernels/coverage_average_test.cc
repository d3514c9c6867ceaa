// SumDivide (the fused coverage division) against its scalar reference, bit for
// bit: random values including NaN, inf, subnormals and signed zeros, every
// supported type, divisors 1..9, odd sizes, in place and out of place; plus a
// few hand-computed values that pin the reference itself.
#include "kernels/coverage_average.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/cpu_isa.h"
#include "support/float_compare.h"

namespace sieve::kernels {
namespace {

using sieve_test::CountDifferent;

const DType kTypes[] = {DType::kFloat32, DType::kFloat64, DType::kFloat16, DType::kBfloat16};

// Random element bits: mostly ordinary values, sometimes specials.
std::vector<char> RandomElements(DType dtype, size_t n, std::mt19937_64& rng) {
  const size_t es = DTypeSize(dtype);
  std::vector<char> out(n * es);
  for (size_t i = 0; i < n; ++i) {
    uint64_t bits = rng();
    double v = static_cast<double>(static_cast<int64_t>(bits % 2001) - 1000) / 8.0;
    switch (rng() % 16) {
      case 0:
        v = NAN;
        break;
      case 1:
        v = INFINITY;
        break;
      case 2:
        v = -0.0;
        break;
      case 3:
        v = 1e-7;
        break;  // subnormal as half
      default:
        break;
    }
    if (dtype == DType::kFloat64) {
      std::memcpy(&out[i * es], &v, 8);
    } else if (dtype == DType::kFloat32) {
      float f = static_cast<float>(v);
      std::memcpy(&out[i * es], &f, 4);
    } else {
      uint16_t h = dtype == DType::kFloat16 ? FloatToHalf(static_cast<float>(v))
                                            : FloatToBf16(static_cast<float>(v));
      if (rng() % 8 == 0) h = static_cast<uint16_t>(bits >> 20);  // any bit pattern
      std::memcpy(&out[i * es], &h, 2);
    }
  }
  return out;
}

// Every ISA path (pinned in turn with CapCpuIsa), so the baseline x86-64 build that
// CPUs without AVX2 run is held to the reference too.
TEST(SumDivideTest, MatchesReferenceBitForBit) {
  std::mt19937_64 rng(11);
  for (int isa = 0; isa <= static_cast<int>(DetectedCpuIsa()); ++isa) {
    CapCpuIsa(static_cast<CpuIsa>(isa));
    for (DType dtype : kTypes) {
      for (size_t n : {size_t{0}, size_t{1}, size_t{7}, size_t{513}, size_t{4099}}) {
        for (int divisor = 1; divisor <= 9; ++divisor) {
          const size_t es = DTypeSize(dtype);
          std::vector<char> a = RandomElements(dtype, n, rng), b = RandomElements(dtype, n, rng);
          std::vector<char> want(n * es + 1, 0x11), got(n * es + 1, 0x11);
          SumDivideReference(dtype, a.data(), b.data(), want.data(), n, divisor);
          SumDivide(dtype, a.data(), b.data(), got.data(), n, divisor);
          ASSERT_EQ(0u, CountDifferent(dtype, want, got.data(), n))
              << DTypeName(dtype) << " n " << n << " divisor " << divisor << " isa " << isa;
          ASSERT_EQ(want.back(), got.back()) << "wrote past n";
          std::vector<char> in_a = a;  // out aliasing a
          SumDivide(dtype, in_a.data(), b.data(), in_a.data(), n, divisor);
          ASSERT_EQ(0u, CountDifferent(dtype, want, in_a.data(), n)) << DTypeName(dtype);
          std::vector<char> in_b = b;  // out aliasing b
          SumDivide(dtype, a.data(), in_b.data(), in_b.data(), n, divisor);
          ASSERT_EQ(0u, CountDifferent(dtype, want, in_b.data(), n)) << DTypeName(dtype);
        }
      }
    }
  }
  CapCpuIsa(CpuIsa::kAvx512);
}

TEST(SumDivideTest, ReferenceHandValues) {
  float a[3] = {1.0f, 2.0f, -3.0f}, b[3] = {2.0f, 2.0f, 0.5f}, out[3];
  SumDivideReference(DType::kFloat32, a, b, out, 3, 3);
  EXPECT_EQ(out[0], 1.0f);
  EXPECT_EQ(out[1], 4.0f / 3.0f);
  EXPECT_EQ(out[2], -2.5f / 3.0f);
  double da[1] = {1.0}, db[1] = {0.0}, dout[1];
  SumDivideReference(DType::kFloat64, da, db, dout, 1, 3);
  EXPECT_EQ(dout[0], 1.0 / 3.0);
  // float16: 1 + 2 = 3, / 4 = 0.75 exactly; bfloat16: (1 + 1) / 3 rounds once to 0x3f2b.
  uint16_t h[2] = {FloatToHalf(1.0f), FloatToHalf(2.0f)}, hout = 0;
  SumDivideReference(DType::kFloat16, &h[0], &h[1], &hout, 1, 4);
  EXPECT_EQ(HalfToFloat(hout), 0.75f);
  uint16_t g = FloatToBf16(1.0f), gout = 0;
  SumDivideReference(DType::kBfloat16, &g, &g, &gout, 1, 3);
  EXPECT_EQ(gout, 0x3f2b);
}

TEST(SumDivideTest, SupportsExactlyTheFloatTypes) {
  for (int t = 0; t < kNumDTypes; ++t) {
    DType d = static_cast<DType>(t);
    bool want = d == DType::kFloat32 || d == DType::kFloat64 || d == DType::kFloat16 ||
                d == DType::kBfloat16;
    EXPECT_EQ(SupportsCoverageAverage(d), want) << DTypeName(d);
  }
}

}  // namespace
}  // namespace sieve::kernels
