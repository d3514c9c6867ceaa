// Philox 4x32-10 against Random123's known-answer vectors, and the ternary
// CPU kernels against their scalar references (odd sizes, unaligned offsets).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <random>
#include <vector>

#include "kernels/cpu_isa.h"
#include "kernels/philox.h"
#include "kernels/ternary.h"

namespace sieve::kernels {
namespace {

void ExpectPhilox(Philox4 ctr, uint32_t k0, uint32_t k1, Philox4 expected) {
  Philox4 got = Philox4x32x10(ctr, k0, k1);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(got.v[i], expected.v[i]) << "word " << i;
}

TEST(PhiloxTest, KnownAnswerVectors) {
  // Random123 kat_vectors, philox4x32 with 10 rounds.
  ExpectPhilox({{0, 0, 0, 0}}, 0, 0, {{0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u}});
  ExpectPhilox({{~0u, ~0u, ~0u, ~0u}}, ~0u, ~0u,
               {{0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu}});
  ExpectPhilox({{0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u}}, 0xa4093822u, 0x299f31d0u,
               {{0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u}});
}

TEST(PhiloxTest, StreamKeyingAndHalves) {
  PhiloxStream s{0x0123456789abcdefull, 5, 0xfedcba9876543210ull};
  Philox4 direct = Philox4x32x10({{7, 5, 0x76543210u, 0xfedcba98u}}, 0x89abcdefu, 0x01234567u);
  Philox4 oct = PhiloxOct(s, 7);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(oct.v[i], direct.v[i]);
  // The refinement stream: counter word 0 with bit 31 set.
  Philox4 refine =
      Philox4x32x10({{7u | 0x80000000u, 5, 0x76543210u, 0xfedcba98u}}, 0x89abcdefu, 0x01234567u);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(PhiloxOct(s, 7, true).v[i], refine.v[i]);
  // Element 8 * 7 + e takes the e-th little-endian 16-bit half of the four words.
  uint16_t halves[8];
  std::memcpy(halves, oct.v, sizeof(halves));
  for (uint64_t e = 0; e < 8; ++e) EXPECT_EQ(PhiloxHalf(oct, 56 + e), halves[e]) << e;
}

// The batches' shortcut through the first two rounds (PhiloxHead) gives PhiloxOct's
// words for any stream, oct and refinement flag.
TEST(PhiloxTest, HeadGivesPhiloxOct) {
  std::mt19937_64 rng(20261205);
  for (int trial = 0; trial < 2000; ++trial) {
    PhiloxStream s{rng(), static_cast<uint32_t>(rng()), rng()};
    if (trial == 0) s = PhiloxStream{0, 0, 0};
    if (trial == 1) s = PhiloxStream{~uint64_t{0}, ~0u, ~uint64_t{0}};
    const PhiloxHead head = PhiloxHeadOf(s);
    const uint64_t octs[] = {0, 1, (uint64_t{1} << 31) - 1, rng() % (uint64_t{1} << 31)};
    for (const uint64_t oct : octs) {
      for (const bool refine : {false, true}) {
        const Philox4 want = PhiloxOct(s, oct, refine);
        const Philox4 got =
            PhiloxFromHead(head, static_cast<uint32_t>(oct) | (refine ? kPhiloxRefine : 0u));
        for (int i = 0; i < 4; ++i)
          ASSERT_EQ(got.v[i], want.v[i]) << "trial " << trial << " oct " << oct << " word " << i;
      }
    }
  }
}

TEST(TernaryTest, Bits) {
  EXPECT_EQ(TernaryBits(1), 2);
  EXPECT_EQ(TernaryBits(2), 3);
  EXPECT_EQ(TernaryBits(3), 3);
  EXPECT_EQ(TernaryBits(4), 4);
  EXPECT_EQ(TernaryBits(7), 4);
  EXPECT_EQ(TernaryBits(8), 5);
  EXPECT_EQ(TernaryBits(127), 8);
  EXPECT_EQ(TernaryBits(128), 9);
  EXPECT_EQ(TernaryPackedBytes(7, 2), 2u);
  EXPECT_EQ(TernaryWorkFor(127), TernaryWork::kInt8);
  EXPECT_EQ(TernaryWorkFor(128), TernaryWork::kInt16);
}

TEST(TernaryTest, PackLayoutIsLittleEndianTwosComplement) {
  const int32_t v[5] = {1, -1, 0, -2, 1};  // w = 2: 01 11 00 10 | 01
  uint8_t wire[2] = {0xaa, 0xaa};
  std::vector<int32_t> in(v, v + 5);
  std::vector<int8_t> work(in.begin(), in.end());
  TernaryPack(TernaryWork::kInt8, work.data(), 5, 2, wire);
  EXPECT_EQ(wire[0], 0x8d);  // 0b10'00'11'01
  EXPECT_EQ(wire[1], 0x01);
}

template <typename T>
void CheckPackWidth(TernaryWork wt, int w, size_t n, std::mt19937_64& rng) {
  int64_t lim = (int64_t{1} << (w - 1)) - 1;
  std::uniform_int_distribution<int64_t> dist(-lim, lim);
  std::vector<int32_t> v(n);
  std::vector<T> work(n), back(n, 3);
  for (size_t i = 0; i < n; ++i) work[i] = static_cast<T>(v[i] = static_cast<int32_t>(dist(rng)));
  std::vector<uint8_t> got(TernaryPackedBytes(n, w) + 1, 0xee), want(got.size(), 0xee);
  TernaryPack(wt, work.data(), n, w, got.data());
  TernaryPackReference(v.data(), n, w, want.data());
  ASSERT_EQ(got, want) << "w " << w << " n " << n;
  TernaryUnpack(wt, got.data(), n, w, /*accumulate=*/false, back.data());
  ASSERT_EQ(back, work) << "w " << w << " n " << n;
  TernaryUnpack(wt, got.data(), n, w, /*accumulate=*/true, back.data());
  std::vector<int32_t> ref(n);
  TernaryUnpackReference(want.data(), n, w, ref.data());
  for (size_t i = 0; i < n; ++i) ASSERT_EQ(back[i], static_cast<T>(2 * ref[i])) << i;
}

TEST(TernaryTest, PackUnpackMatchReferenceForEveryWidth) {
  std::mt19937_64 rng(11);
  // int8 work goes up to w = 8 (n = 127 ranks); counts with and without a
  // partial last group.
  for (size_t n : {size_t{1}, size_t{7}, size_t{8}, size_t{9}, size_t{16}, size_t{23},
                   size_t{1001}}) {
    for (int w = 2; w <= 8; ++w) CheckPackWidth<int8_t>(TernaryWork::kInt8, w, n, rng);
    for (int w = 2; w <= 16; ++w) CheckPackWidth<int16_t>(TernaryWork::kInt16, w, n, rng);
    for (int w = 2; w <= 31; ++w) CheckPackWidth<int32_t>(TernaryWork::kInt32, w, n, rng);
  }
}

// The dense positions owned by packed range [a, b) (as kernels::MaskedDenseRange).
void MaskedDenseRangeForTest(const std::vector<uint32_t>& idx, size_t count, size_t a, size_t b,
                             size_t* begin, size_t* end) {
  if (a == b) {
    *begin = *end = 0;
    return;
  }
  *begin = a == 0 ? 0 : idx[a - 1] + 1;
  *end = b == idx.size() ? count : idx[b - 1] + 1;
}

std::vector<uint16_t> ToHalfish(DType dtype, const std::vector<float>& f) {
  std::vector<uint16_t> out(f.size());
  for (size_t i = 0; i < f.size(); ++i)
    out[i] = dtype == DType::kFloat16 ? FloatToHalf(f[i]) : FloatToBf16(f[i]);
  return out;
}

class TernaryQuantTest : public ::testing::TestWithParam<DType> {};

TEST_P(TernaryQuantTest, KernelsMatchScalarReference) {
  DType dtype = GetParam();
  const size_t count = 5003;
  std::mt19937_64 rng(3);
  std::uniform_real_distribution<float> real(-1.0f, 1.0f);
  std::vector<float> f(count);
  for (float& x : f) x = real(rng);
  f[10] = 0.0f;
  for (size_t j = 2048; j < 4096; ++j) f[j] = 0.0f;  // a zero block: s = 0
  std::vector<uint16_t> h = ToHalfish(dtype, f);
  const void* in = dtype == DType::kFloat32 ? static_cast<const void*>(f.data()) : h.data();
  PhiloxStream s{42, 3, 17};
  for (int isa = 0; isa <= static_cast<int>(DetectedCpuIsa()); ++isa) {
    CapCpuIsa(static_cast<CpuIsa>(isa));
    SCOPED_TRACE("isa " + std::to_string(isa));
    for (size_t block : {size_t{1}, size_t{7}, size_t{2048}}) {
      std::vector<float> scales((count + block - 1) / block);
      TernaryAbsMax(dtype, in, count, block, scales.data());
      for (size_t offset : {size_t{0}, size_t{3}, size_t{1001}}) {
        size_t elems = count - offset - 2;
        std::vector<int8_t> q(elems);
        TernaryQuantizeReference(dtype, in, offset, elems, block, scales.data(), s, q.data());
        std::vector<int32_t> q32(q.begin(), q.end());
        std::vector<uint8_t> want(TernaryPackedBytes(elems, 2)), got(want.size());
        TernaryPackReference(q32.data(), elems, 2, want.data());
        TernaryQuantizePack(dtype, in, offset, elems, block, scales.data(), s, 2, got.data());
        ASSERT_EQ(got, want) << "block " << block << " offset " << offset;
        std::vector<int8_t> work(elems);
        TernaryQuantizeAdd(dtype, in, offset, elems, block, scales.data(), s, got.data(), 2,
                           TernaryWork::kInt8, work.data());
        for (size_t i = 0; i < elems; ++i) ASSERT_EQ(work[i], 2 * q[i]) << i;
        TernaryQuantizeAdd(dtype, in, offset, elems, block, scales.data(), s, nullptr, 2,
                           TernaryWork::kInt8, work.data());
        for (size_t i = 0; i < elems; ++i) ASSERT_EQ(work[i], q[i]) << i;
      }
  }
  }
  CapCpuIsa(CpuIsa::kAvx512);
}

// A random mask's kept indices (increasing) and bitmap.
void RandomMask(size_t count, double density, std::mt19937_64& rng, std::vector<uint32_t>* idx,
                std::vector<uint64_t>* bits) {
  std::uniform_real_distribution<double> u(0, 1);
  idx->clear();
  bits->assign((count + 63) / 64, 0);
  for (size_t j = 0; j < count; ++j) {
    if (u(rng) >= density) continue;
    idx->push_back(static_cast<uint32_t>(j));
    (*bits)[j / 64] |= uint64_t{1} << (j % 64);
  }
}

// Quantization gathered through a mask (the fused masked + ternary first hop):
// every ISA level equals the scalar reference on the gathered elements.
TEST_P(TernaryQuantTest, GatheredQuantizationMatchesReference) {
  DType dtype = GetParam();
  std::mt19937_64 rng(23 + static_cast<int>(dtype));
  std::uniform_real_distribution<float> real(-2.0f, 2.0f);
  for (double density : {0.0, 0.001, 0.2, 0.5, 0.9, 1.0}) {
    const size_t count = 3001 + rng() % 4000;
    std::vector<float> f(count);
    for (float& x : f) x = real(rng);
    std::vector<uint16_t> h = ToHalfish(dtype, f);
    const void* in = dtype == DType::kFloat32 ? static_cast<const void*>(f.data()) : h.data();
    std::vector<uint32_t> idx;
    std::vector<uint64_t> bits;
    RandomMask(count, density, rng, &idx, &bits);
    const size_t nnz = idx.size();
    const size_t block = 1 + rng() % 300;
    std::vector<float> scales((nnz + block - 1) / block), want_scales(scales.size(), 0.0f);
    for (size_t k = 0; k < nnz; ++k) {
      float a = std::fabs(dtype == DType::kFloat32 ? f[idx[k]]
                          : dtype == DType::kFloat16 ? HalfToFloat(h[idx[k]])
                                                     : Bf16ToFloat(h[idx[k]]));
      want_scales[k / block] = std::max(want_scales[k / block], a);
    }
    TernaryAbsMax(dtype, in, idx.data(), nnz, block, scales.data());
    ASSERT_EQ(scales, want_scales);
    PhiloxStream s{rng(), static_cast<uint32_t>(rng() % 8), rng()};
    const size_t offset = nnz == 0 ? 0 : rng() % nnz, elems = nnz - offset;
    std::vector<int8_t> q(elems);
    TernaryQuantizeReference(dtype, in, idx.data(), offset, elems, block, scales.data(), s,
                             q.data());
    std::vector<int32_t> q32(q.begin(), q.end());
    std::vector<uint8_t> want(TernaryPackedBytes(elems, 2));
    TernaryPackReference(q32.data(), elems, 2, want.data());
    for (int isa = 0; isa <= static_cast<int>(DetectedCpuIsa()); ++isa) {
      CapCpuIsa(static_cast<CpuIsa>(isa));
      std::vector<uint8_t> got(want.size() + 1, 0xee);
      TernaryQuantizePack(dtype, in, idx.data(), offset, elems, block, scales.data(), s, 2,
                          got.data());
      ASSERT_TRUE(std::equal(want.begin(), want.end(), got.begin()))
          << density << " isa " << isa;
      ASSERT_EQ(got[want.size()], 0xee);
      std::vector<int16_t> work(elems);
      TernaryQuantizeAdd(dtype, in, idx.data(), offset, elems, block, scales.data(), s,
                         got.data(), 2, TernaryWork::kInt16, work.data());
      for (size_t i = 0; i < elems; ++i) ASSERT_EQ(work[i], 2 * q[i]) << i << " isa " << isa;
    }
    CapCpuIsa(CpuIsa::kAvx512);
  }
}

// Dequantize fused with the mask's unpack, zero-fill and the average's division,
// per dense range as the last hop delivers it.
TEST_P(TernaryQuantTest, DequantizeScatterMatchesReference) {
  DType dtype = GetParam();
  std::mt19937_64 rng(31 + static_cast<int>(dtype));
  for (double density : {0.0, 0.001, 0.2, 0.5, 0.9, 1.0}) {
    const size_t count = 2001 + rng() % 3000;
    std::vector<uint32_t> idx;
    std::vector<uint64_t> bits;
    RandomMask(count, density, rng, &idx, &bits);
    const size_t nnz = idx.size(), block = 1 + rng() % 200;
    std::vector<float> scales((nnz + block - 1) / block + 1);
    for (float& x : scales) x = std::uniform_real_distribution<float>(0.0f, 3.0f)(rng);
    std::vector<int32_t> sums32(nnz + 1);
    std::vector<int8_t> sums8(nnz + 1);
    for (size_t k = 0; k < nnz; ++k) sums8[k] = static_cast<int8_t>(sums32[k] = rng() % 15 - 7);
    const size_t es = DTypeSize(dtype);
    for (int divisor : {1, 7}) {
      size_t a = nnz == 0 ? 0 : rng() % nnz, b = a + (nnz == a ? 0 : rng() % (nnz - a + 1));
      size_t begin, end;
      MaskedDenseRangeForTest(idx, count, a, b, &begin, &end);
      std::vector<char> got(count * es, 0x5a), want(count * es, 0x5a);
      TernaryDequantizeScatter(dtype, TernaryWork::kInt8, sums8.data() + a, a, block,
                               scales.data(), divisor, bits.data(), begin, end, got.data());
      TernaryDequantizeScatterReference(dtype, sums32.data() + a, a, block, scales.data(),
                                        divisor, bits.data(), begin, end, want.data());
      ASSERT_EQ(got, want) << density << " [" << a << ", " << b << ") divisor " << divisor;
    }
  }
}

TEST_P(TernaryQuantTest, DequantizeSumAndAverage) {
  DType dtype = GetParam();
  const size_t count = 13, block = 5;
  std::vector<float> scales = {0.75f, 0.3f, 0.0f};
  std::vector<int16_t> sums(count);
  for (size_t j = 0; j < count; ++j) sums[j] = static_cast<int16_t>(static_cast<int>(j % 7) - 3);
  for (int divisor : {1, 3}) {
    std::vector<uint16_t> out16(count);
    std::vector<float> out32(count);
    void* out = dtype == DType::kFloat32 ? static_cast<void*>(out32.data()) : out16.data();
    TernaryDequantize(dtype, TernaryWork::kInt16, sums.data(), count, block, scales.data(),
                      divisor, out);
    for (size_t j = 0; j < count; ++j) {
      float v = scales[j / block] * static_cast<float>(sums[j]);
      if (divisor != 1) v = v / static_cast<float>(divisor);
      if (dtype == DType::kFloat32) {
        ASSERT_EQ(out32[j], v) << j;
      } else {
        ASSERT_EQ(out16[j], dtype == DType::kFloat16 ? FloatToHalf(v) : FloatToBf16(v)) << j;
      }
    }
  }
}

TEST(TernaryTest, QuantizationIsUnbiased) {
  // One element, many rank/step streams: mean of s*q approaches g.
  const float g = -0.3f, s = 1.0f;
  const int trials = 200000;
  double sum = 0;
  for (int t = 0; t < trials; ++t) {
    PhiloxStream st{9, static_cast<uint32_t>(t % 7), static_cast<uint64_t>(t)};
    std::vector<int8_t> q(1);
    TernaryQuantizeReference(DType::kFloat32, &g, 0, 1, 1, &s, st, q.data());
    sum += q[0];
  }
  double se = std::sqrt((std::fabs(g) * s - g * g) / trials);
  EXPECT_NEAR(sum / trials, g, 5 * se);
}

INSTANTIATE_TEST_SUITE_P(Types, TernaryQuantTest,
                         ::testing::Values(DType::kFloat32, DType::kFloat16, DType::kBfloat16));

}  // namespace
}  // namespace sieve::kernels
