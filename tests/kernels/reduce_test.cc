// Reduce/DivideBy against the scalar references, bit for bit, over every dtype, op, size
// and aliasing; plus hand-computed vectors that check the references themselves.
#include "kernels/reduce.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "kernels/cpu_isa.h"

namespace sieve::kernels {
namespace {

constexpr DType kAllDTypes[] = {DType::kInt8,    DType::kUint8,   DType::kInt32,   DType::kUint32,
                                DType::kInt64,   DType::kUint64,  DType::kFloat16, DType::kFloat32,
                                DType::kFloat64, DType::kBfloat16};
constexpr RedOp kAllOps[] = {RedOp::kSum, RedOp::kProd, RedOp::kMax, RedOp::kMin, RedOp::kAvg};
constexpr size_t kSizes[] = {0, 1, 7, 1023, (size_t{1} << 20) | 3};

enum class Alias { kSeparate, kOutIsA, kOutIsB, kAllSame };
constexpr Alias kAllAliases[] = {Alias::kSeparate, Alias::kOutIsA, Alias::kOutIsB, Alias::kAllSame};
const char* AliasName(Alias a) {
  switch (a) {
    case Alias::kSeparate:
      return "separate";
    case Alias::kOutIsA:
      return "out==a";
    case Alias::kOutIsB:
      return "out==b";
    case Alias::kAllSame:
      return "out==a==b";
  }
  return "?";
}

bool IsNanAt(DType dtype, const unsigned char* p) {
  uint16_t h;
  float f;
  double d;
  switch (dtype) {
    case DType::kFloat16:
      std::memcpy(&h, p, 2);
      return (h & 0x7c00u) == 0x7c00u && (h & 0x3ffu) != 0;
    case DType::kBfloat16:
      std::memcpy(&h, p, 2);
      return (h & 0x7f80u) == 0x7f80u && (h & 0x7fu) != 0;
    case DType::kFloat32:
      std::memcpy(&f, p, 4);
      return std::isnan(f);
    case DType::kFloat64:
      std::memcpy(&d, p, 8);
      return std::isnan(d);
    default:
      return false;
  }
}

// Bytes must match exactly, except that two NaNs may carry different payloads.
::testing::AssertionResult SameBits(DType dtype, const void* got, const void* want, size_t n) {
  const size_t es = DTypeSize(dtype);
  if (n == 0 || std::memcmp(got, want, n * es) == 0) return ::testing::AssertionSuccess();
  const auto* g = static_cast<const unsigned char*>(got);
  const auto* w = static_cast<const unsigned char*>(want);
  for (size_t i = 0; i < n; ++i) {
    if (std::memcmp(g + i * es, w + i * es, es) == 0) continue;
    if (IsNanAt(dtype, g + i * es) && IsNanAt(dtype, w + i * es)) continue;
    uint64_t gv = 0, wv = 0;
    std::memcpy(&gv, g + i * es, es);
    std::memcpy(&wv, w + i * es, es);
    char msg[96];
    std::snprintf(msg, sizeof(msg), "element %zu of %zu: got 0x%llx, want 0x%llx", i, n,
                  static_cast<unsigned long long>(gv), static_cast<unsigned long long>(wv));
    return ::testing::AssertionFailure() << msg;
  }
  return ::testing::AssertionSuccess();
}

void StoreFloat(DType dtype, unsigned char* p, double v) {
  uint16_t h;
  float f = static_cast<float>(v);
  switch (dtype) {
    case DType::kFloat16:
      h = FloatToHalf(f);
      std::memcpy(p, &h, 2);
      break;
    case DType::kBfloat16:
      h = FloatToBf16(f);
      std::memcpy(p, &h, 2);
      break;
    case DType::kFloat32:
      std::memcpy(p, &f, 4);
      break;
    default:
      std::memcpy(p, &v, 8);
      break;
  }
}

// Integers: full-range random bits. Floats: uniform in [-8, 8] plus a sprinkling of
// zeros of both signs, infinities, NaN, huge and subnormal values.
std::vector<unsigned char> RandomBuffer(DType dtype, size_t n, std::mt19937_64& rng) {
  const size_t es = DTypeSize(dtype);
  std::vector<unsigned char> buf(n * es);
  if (!IsFloating(dtype)) {
    for (size_t off = 0; off < buf.size(); off += 8) {
      const uint64_t r = rng();
      std::memcpy(buf.data() + off, &r, std::min<size_t>(8, buf.size() - off));
    }
    return buf;
  }
  std::uniform_real_distribution<double> dist(-8.0, 8.0);
  for (size_t i = 0; i < n; ++i) StoreFloat(dtype, buf.data() + i * es, dist(rng));
  const double specials[] = {0.0,     -0.0,    INFINITY, -INFINITY, NAN,   60000.0,
                             -3.0e38, 1.0e300, 1e-7,     -6e-8,     1e-40, 0.5};
  // Dense specials at the front so a[i] and b[i] are often both special (+0 vs -0,
  // inf vs -inf); sparse ones elsewhere.
  for (size_t i = 0; i < std::min<size_t>(n, 48); ++i) {
    if (rng() % 2) StoreFloat(dtype, buf.data() + i * es, specials[rng() % std::size(specials)]);
  }
  for (size_t k = 0; n > 0 && k < 32; ++k) {
    StoreFloat(dtype, buf.data() + (rng() % n) * es, specials[rng() % std::size(specials)]);
  }
  return buf;
}

class ReduceSweep : public ::testing::TestWithParam<std::tuple<DType, RedOp>> {};

TEST_P(ReduceSweep, MatchesReference) {
  const auto [dtype, op] = GetParam();
  const size_t es = DTypeSize(dtype);
  for (size_t n : kSizes) {
    for (Alias alias : kAllAliases) {
      SCOPED_TRACE(std::string(DTypeName(dtype)) + " " + RedOpName(op) + " n=" + std::to_string(n) +
                   " " + AliasName(alias));
      std::mt19937_64 rng((static_cast<uint64_t>(dtype) << 48) ^ (static_cast<uint64_t>(op) << 40) ^
                          (n << 4) ^ static_cast<uint64_t>(alias));
      // One spare element in front so the kernels also see buffers not vector-aligned.
      std::vector<unsigned char> a = RandomBuffer(dtype, n + 1, rng);
      std::vector<unsigned char> b = alias == Alias::kAllSame ? a : RandomBuffer(dtype, n + 1, rng);
      std::vector<unsigned char> out = RandomBuffer(dtype, n + 1, rng);  // garbage to overwrite
      std::vector<unsigned char> want(out.size());
      ReduceReference(dtype, op, a.data() + es, b.data() + es, want.data() + es, n);
      unsigned char* dst = out.data();
      if (alias == Alias::kOutIsA || alias == Alias::kAllSame) dst = a.data();
      if (alias == Alias::kOutIsB) dst = b.data();
      const unsigned char* src_b = alias == Alias::kAllSame ? a.data() : b.data();
      std::memcpy(want.data(), dst, es);  // the spare element must stay untouched
      Reduce(dtype, op, a.data() + es, src_b + es, dst + es, n);
      ASSERT_TRUE(SameBits(dtype, dst, want.data(), n + 1));
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllTypesAndOps, ReduceSweep,
                         ::testing::Combine(::testing::ValuesIn(kAllDTypes),
                                            ::testing::ValuesIn(kAllOps)),
                         [](const auto& info) {
                           return std::string(DTypeName(std::get<0>(info.param))) + "_" +
                                  RedOpName(std::get<1>(info.param));
                         });

// Every ISA path of Reduce/DivideBy (the baseline x86-64 build is what CPUs without AVX2
// run), pinned in turn with CapCpuIsa, against the references on odd sizes.
TEST(ReduceIsaPathsTest, EveryPathMatchesReference) {
  for (int isa = 0; isa <= static_cast<int>(DetectedCpuIsa()); ++isa) {
    CapCpuIsa(static_cast<CpuIsa>(isa));
    for (DType dtype : kAllDTypes) {
      const size_t es = DTypeSize(dtype);
      for (size_t n : {size_t{7}, size_t{1023}, size_t{4099}}) {
        SCOPED_TRACE(std::string(DTypeName(dtype)) + " n=" + std::to_string(n) +
                     " isa=" + std::to_string(isa));
        std::mt19937_64 rng((static_cast<uint64_t>(dtype) << 32) ^ (n << 4) ^ isa);
        std::vector<unsigned char> a = RandomBuffer(dtype, n, rng), b = RandomBuffer(dtype, n, rng);
        for (RedOp op : kAllOps) {
          std::vector<unsigned char> want(n * es), got(n * es);
          ReduceReference(dtype, op, a.data(), b.data(), want.data(), n);
          Reduce(dtype, op, a.data(), b.data(), got.data(), n);
          ASSERT_TRUE(SameBits(dtype, got.data(), want.data(), n)) << RedOpName(op);
        }
        std::vector<unsigned char> want = a, got = a;
        DivideByReference(dtype, want.data(), n, 3);
        DivideBy(dtype, got.data(), n, 3);
        ASSERT_TRUE(SameBits(dtype, got.data(), want.data(), n)) << "DivideBy";
      }
    }
  }
  CapCpuIsa(CpuIsa::kAvx512);
}

// b may sit at any address (ReduceSink hands the kernels UCX's fragments where they
// lie, +21 or +26 mod 64 over TCP): every ISA path, dtype and op with b at every byte
// offset up to 15 against the reference over an aligned copy. Under UBSan (CI's
// sanitizer build) a typed read of a misaligned b fails here.
TEST(ReduceIsaPathsTest, OperandBAtAnyAddress) {
  for (int isa = 0; isa <= static_cast<int>(DetectedCpuIsa()); ++isa) {
    CapCpuIsa(static_cast<CpuIsa>(isa));
    for (DType dtype : kAllDTypes) {
      const size_t es = DTypeSize(dtype);
      for (size_t n : {size_t{1}, size_t{37}, size_t{1029}}) {
        std::mt19937_64 rng((static_cast<uint64_t>(dtype) << 32) ^ (n << 8) ^ isa ^ 0x5eed);
        std::vector<unsigned char> a = RandomBuffer(dtype, n, rng), b = RandomBuffer(dtype, n, rng);
        std::vector<unsigned char> shifted(n * es + 16);
        for (size_t offset = 1; offset < 16; ++offset) {
          SCOPED_TRACE(std::string(DTypeName(dtype)) + " n=" + std::to_string(n) +
                       " isa=" + std::to_string(isa) + " b at +" + std::to_string(offset));
          std::memcpy(shifted.data() + offset, b.data(), n * es);
          for (RedOp op : kAllOps) {
            std::vector<unsigned char> want(n * es), got(n * es);
            ReduceReference(dtype, op, a.data(), b.data(), want.data(), n);
            Reduce(dtype, op, a.data(), shifted.data() + offset, got.data(), n);
            ASSERT_TRUE(SameBits(dtype, got.data(), want.data(), n)) << RedOpName(op);
          }
        }
      }
    }
  }
  CapCpuIsa(CpuIsa::kAvx512);
}

TEST(DivideByTest, MatchesReference) {
  for (DType dtype : kAllDTypes) {
    for (int divisor : {1, 2, 3, 7}) {
      for (size_t n : {size_t{0}, size_t{1}, size_t{7}, size_t{4099}}) {
        SCOPED_TRACE(std::string(DTypeName(dtype)) + " / " + std::to_string(divisor) +
                     " n=" + std::to_string(n));
        std::mt19937_64 rng((static_cast<uint64_t>(dtype) << 32) ^ (divisor << 16) ^ n);
        std::vector<unsigned char> got = RandomBuffer(dtype, n, rng);
        std::vector<unsigned char> want = got;
        DivideBy(dtype, got.data(), n, divisor);
        DivideByReference(dtype, want.data(), n, divisor);
        ASSERT_TRUE(SameBits(dtype, got.data(), want.data(), n));
      }
    }
  }
}

// Every float16/bfloat16 bit pattern as `a` (paired with a scrambled one as `b`), so the
// fast kernels' own conversions are held to dtype.h's on all inputs, on every ISA path.
TEST(ReduceSixteenBitTest, AllBitPatternsMatchReference) {
  for (int isa = 0; isa <= static_cast<int>(DetectedCpuIsa()); ++isa)
  for (DType dtype : {DType::kFloat16, DType::kBfloat16}) {
    CapCpuIsa(static_cast<CpuIsa>(isa));
    SCOPED_TRACE("isa " + std::to_string(isa));
    std::vector<uint16_t> a(1 << 16), b(1 << 16);
    for (uint32_t i = 0; i < a.size(); ++i) {
      a[i] = static_cast<uint16_t>(i);
      b[i] = static_cast<uint16_t>(i * 40503u + 12345u);  // odd multiplier: a permutation
    }
    for (RedOp op : kAllOps) {
      SCOPED_TRACE(std::string(DTypeName(dtype)) + " " + RedOpName(op));
      std::vector<uint16_t> fast(a.size()), ref(a.size());
      Reduce(dtype, op, a.data(), b.data(), fast.data(), a.size());
      ReduceReference(dtype, op, a.data(), b.data(), ref.data(), a.size());
      ASSERT_TRUE(SameBits(dtype, fast.data(), ref.data(), a.size()));
    }
    for (int divisor : {1, 3}) {
      std::vector<uint16_t> fast = a, ref = a;
      DivideBy(dtype, fast.data(), fast.size(), divisor);
      DivideByReference(dtype, ref.data(), ref.size(), divisor);
      ASSERT_TRUE(SameBits(dtype, fast.data(), ref.data(), a.size())) << "divide by " << divisor;
    }
  }
  CapCpuIsa(CpuIsa::kAvx512);
}

// Hand-computed vectors: both the fast kernel and the reference must produce them.
template <typename T>
void ExpectReduce(DType dtype, RedOp op, std::vector<T> a, std::vector<T> b,
                  const std::vector<T>& want) {
  ASSERT_EQ(sizeof(T), DTypeSize(dtype));
  std::vector<T> fast(a.size()), ref(a.size());
  Reduce(dtype, op, a.data(), b.data(), fast.data(), a.size());
  ReduceReference(dtype, op, a.data(), b.data(), ref.data(), a.size());
  EXPECT_TRUE(SameBits(dtype, fast.data(), want.data(), want.size())) << "Reduce";
  EXPECT_TRUE(SameBits(dtype, ref.data(), want.data(), want.size())) << "ReduceReference";
}

template <typename T>
void ExpectDivide(DType dtype, int divisor, std::vector<T> buf, const std::vector<T>& want) {
  std::vector<T> ref = buf;
  DivideBy(dtype, buf.data(), buf.size(), divisor);
  DivideByReference(dtype, ref.data(), ref.size(), divisor);
  EXPECT_TRUE(SameBits(dtype, buf.data(), want.data(), want.size())) << "DivideBy";
  EXPECT_TRUE(SameBits(dtype, ref.data(), want.data(), want.size())) << "DivideByReference";
}

TEST(ReduceHandTest, IntegersWrapAndCompareBySignedness) {
  ExpectReduce<int8_t>(DType::kInt8, RedOp::kSum, {127, -128, -1, 100}, {1, -1, -1, 100},
                       {-128, 127, -2, -56});
  ExpectReduce<uint8_t>(DType::kUint8, RedOp::kProd, {200, 255, 16}, {2, 255, 16}, {144, 1, 0});
  ExpectReduce<int8_t>(DType::kInt8, RedOp::kMax, {-1, -128, 5}, {1, 127, 5}, {1, 127, 5});
  ExpectReduce<uint8_t>(DType::kUint8, RedOp::kMax, {200, 1}, {100, 255}, {200, 255});
  ExpectReduce<int32_t>(DType::kInt32, RedOp::kMin, {INT32_MIN, 3}, {0, -4}, {INT32_MIN, -4});
  ExpectReduce<uint32_t>(DType::kUint32, RedOp::kMin, {0xffffffffu, 7}, {1, 9}, {1, 7});
  ExpectReduce<int64_t>(DType::kInt64, RedOp::kAvg, {INT64_MAX}, {1}, {INT64_MIN});
  ExpectReduce<int64_t>(DType::kInt64, RedOp::kProd, {(int64_t{1} << 32) + 1, -3},
                        {(int64_t{1} << 32) + 1, 5}, {(int64_t{1} << 33) + 1, -15});
  ExpectReduce<uint64_t>(DType::kUint64, RedOp::kProd, {uint64_t{1} << 63}, {2}, {0});
}

TEST(ReduceHandTest, FloatsRoundOnceToNearestEven) {
  // half: 1 + 2^-11 is a tie -> 1 (even); (1 + 2^-10) + 2^-11 is a tie -> 1 + 2^-9;
  // 65504 + 65504 overflows to inf.
  ExpectReduce<uint16_t>(DType::kFloat16, RedOp::kSum, {0x3c00, 0x3c01, 0x7bff},
                         {0x1000, 0x1000, 0x7bff}, {0x3c00, 0x3c02, 0x7c00});
  // (1 + 2^-10)^2 = 1 + 2^-9 + 2^-20 -> 1 + 2^-9.
  ExpectReduce<uint16_t>(DType::kFloat16, RedOp::kProd, {0x3c01}, {0x3c01}, {0x3c02});
  // bf16: 1 + 2^-8 is a tie -> 1; (1 + 2^-7) + 2^-8 is a tie -> 1 + 2^-6.
  ExpectReduce<uint16_t>(DType::kBfloat16, RedOp::kSum, {0x3f80, 0x3f81}, {0x3b80, 0x3b80},
                         {0x3f80, 0x3f82});
  ExpectReduce<float>(DType::kFloat32, RedOp::kSum, {1.5f, 1.0f, 0x1p24f}, {2.25f, 0x1p-24f, 1.0f},
                      {3.75f, 1.0f, 0x1p24f});
  // max: a > b ? a : b, so on +-0 ties the second operand wins.
  ExpectReduce<float>(DType::kFloat32, RedOp::kMax, {0.0f, -0.0f, -1.0f}, {-0.0f, 0.0f, -2.0f},
                      {-0.0f, 0.0f, -1.0f});
  ExpectReduce<double>(DType::kFloat64, RedOp::kMin, {1.0, -0.5}, {0.25, 7.0}, {0.25, -0.5});
}

TEST(DivideByHandTest, TruncatesIntegersRoundsFloatsOnce) {
  ExpectDivide<int32_t>(DType::kInt32, 2, {-7, 7, INT32_MIN}, {-3, 3, -1073741824});
  ExpectDivide<int8_t>(DType::kInt8, 3, {-128, 127, -2}, {-42, 42, 0});
  ExpectDivide<uint8_t>(DType::kUint8, 2, {255, 1}, {127, 0});
  ExpectDivide<uint8_t>(DType::kUint8, 300, {255}, {0});  // divisor wider than the type
  ExpectDivide<int64_t>(DType::kInt64, 4, {-9, INT64_MAX}, {-2, INT64_MAX / 4});
  ExpectDivide<uint64_t>(DType::kUint64, 7, {~uint64_t{0}}, {~uint64_t{0} / 7});
  ExpectDivide<uint16_t>(DType::kFloat16, 3, {0x3c00}, {0x3555});   // 1/3
  ExpectDivide<uint16_t>(DType::kBfloat16, 3, {0x3f80}, {0x3eab});  // 1/3
  ExpectDivide<float>(DType::kFloat32, 3, {1.0f}, {1.0f / 3.0f});
  ExpectDivide<double>(DType::kFloat64, 3, {1.0}, {1.0 / 3.0});
}

}  // namespace
}  // namespace sieve::kernels
