// The ternary kernels libsieve ships (sieve_ternary_* in the embedded module,
// launched by CudaDeviceOps as the device ternary all-reduce launches them)
// against the CPU kernels, byte for byte, for every floating dtype and
// several block sizes: abs-max, quantize into the 2-bit wire, the error
// feedback pair, and the dequantize of the final sums, dense and scattered
// through a mask. Skipped (with the reason) without a GPU.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "kernels/masked_pack.h"
#include "kernels/ternary.h"
#include "kernels/ternary_feedback.h"
#include "support/shipped_kernels.h"

namespace sieve::kernels {
namespace {

using sieve::gpu::CudaDeviceOps;

// A device copy of a host vector, freed at scope exit.
struct DeviceBuf {
  void* p = nullptr;
  size_t bytes = 0;
  DeviceBuf(const void* host, size_t n) : bytes(n) {
    EXPECT_EQ(cudaMalloc(&p, n + 1), cudaSuccess);
    if (host != nullptr) {
      EXPECT_EQ(cudaMemcpy(p, host, n, cudaMemcpyHostToDevice), cudaSuccess);
    }
  }
  ~DeviceBuf() { cudaFree(p); }
  std::vector<char> Get() const {
    std::vector<char> out(bytes);
    EXPECT_EQ(cudaMemcpy(out.data(), p, bytes, cudaMemcpyDeviceToHost), cudaSuccess);
    return out;
  }
};

template <typename T>
std::vector<char> Bytes(const std::vector<T>& v) {
  return std::vector<char>(reinterpret_cast<const char*>(v.data()),
                           reinterpret_cast<const char*>(v.data() + v.size()));
}

std::vector<char> Input(DType dtype, size_t count) {
  std::mt19937_64 rng(5);
  std::uniform_real_distribution<float> real(-1.0f, 1.0f);
  std::vector<char> out(count * DTypeSize(dtype));
  for (size_t i = 0; i < count; ++i) {
    float f = i % 97 == 0 ? 0.0f : real(rng);
    if (dtype == DType::kFloat32) reinterpret_cast<float*>(out.data())[i] = f;
    if (dtype == DType::kFloat16) reinterpret_cast<uint16_t*>(out.data())[i] = FloatToHalf(f);
    if (dtype == DType::kBfloat16) reinterpret_cast<uint16_t*>(out.data())[i] = FloatToBf16(f);
  }
  return out;
}

// Final sums of `ranks` contributions (each in -1..1) packed in TernaryBits(ranks) bits.
std::vector<int32_t> Sums(size_t count, int ranks, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<int32_t> sums(count);
  for (int32_t& s : sums) s = static_cast<int32_t>(rng() % (2 * ranks + 1)) - ranks;
  return sums;
}

class TernaryCudaTest : public ::testing::TestWithParam<DType> {};

TEST_P(TernaryCudaTest, MatchesCpuBitForBit) {
  std::string why;
  CudaDeviceOps* k = sieve_test::ShippedKernels(&why);
  if (k == nullptr) GTEST_SKIP() << "needs a GPU: " << why;
  const DType dtype = GetParam();
  const size_t count = (1 << 18) + 3, es = DTypeSize(dtype);
  std::vector<char> in = Input(dtype, count);
  DeviceBuf din(in.data(), in.size());
  const PhiloxStream rng{77, 2, 123456789012ull};
  for (size_t block : {size_t{1}, size_t{7}, size_t{2048}}) {
    const size_t nb = (count + block - 1) / block;
    std::vector<float> scales(nb);
    TernaryAbsMax(dtype, in.data(), count, block, scales.data());
    DeviceBuf dscales(nullptr, nb * sizeof(float));
    auto* ds = static_cast<float*>(dscales.p);
    ASSERT_TRUE(k->TernaryAbsMax(dtype, din.p, nullptr, count, block, ds, nullptr).ok());
    ASSERT_EQ(dscales.Get(), Bytes(scales)) << "block " << block;
    {  // Error feedback: the scales stay the input's; a NaN-poisoned block's are NaN.
      std::vector<float> residual(count, 1e30f);
      const size_t poisoned = nb / 2;
      for (size_t j = poisoned * block; j < std::min(count, (poisoned + 1) * block); ++j)
        residual[j] = std::numeric_limits<float>::quiet_NaN();
      TernarySource src = TernarySourceOf(dtype, in.data(), nullptr, block, nullptr);
      src.residual = residual.data();
      std::vector<float> want(nb);
      TernaryAbsMax(src, count, want.data());
      DeviceBuf dres(residual.data(), count * sizeof(float));
      ASSERT_TRUE(k->TernaryAbsMax(dtype, din.p, static_cast<const float*>(dres.p), count, block,
                                   ds, nullptr)
                      .ok());
      ASSERT_EQ(dscales.Get(), Bytes(want)) << "block " << block << ", with a residual";
      ASSERT_TRUE(k->TernaryAbsMax(dtype, din.p, nullptr, count, block, ds, nullptr).ok());
    }
    // This rank's 2-bit wire.
    std::vector<char> wire(TernaryPackedBytes(count, 2));
    TernaryQuantizePack(dtype, in.data(), 0, count, block, scales.data(), rng, 2, wire.data());
    DeviceBuf dwire(nullptr, wire.size());
    ASSERT_TRUE(k->TernaryQuantize(dtype, din.p, count, block, ds, rng, 1, dwire.p, nullptr).ok());
    ASSERT_EQ(dwire.Get(), wire) << "block " << block;
    // The final sums of 5 ranks in their wire width, dequantized (avg: / 5).
    for (int ranks : {2, 5}) {
      const int w = TernaryBits(ranks);
      std::vector<int32_t> sums = Sums(count, ranks, block + ranks);
      std::vector<char> sums_wire(TernaryPackedBytes(count, w));
      TernaryPack(TernaryWork::kInt32, sums.data(), count, w, sums_wire.data());
      std::vector<char> out(count * es);
      TernaryDequantizeRange(dtype, TernaryWork::kInt32, sums.data(), 0, count, block,
                             scales.data(), ranks, out.data());
      DeviceBuf dsums(sums_wire.data(), sums_wire.size()), dout(nullptr, out.size());
      ASSERT_TRUE(
          k->TernaryDequantize(dtype, dsums.p, w, count, block, ds, ranks, dout.p, nullptr).ok());
      ASSERT_EQ(dout.Get(), out) << "block " << block << ", " << ranks << " ranks";
    }
  }
}

// Error feedback over several steps, the residual carried on the device:
// g + e_prev, then quantize with the residual update fused, equal to the CPU
// kernels (the host path) byte for byte, residuals included.
TEST_P(TernaryCudaTest, FeedbackMatchesCpuBitForBit) {
  std::string why;
  CudaDeviceOps* k = sieve_test::ShippedKernels(&why);
  if (k == nullptr) GTEST_SKIP() << "needs a GPU: " << why;
  const DType dtype = GetParam();
  const size_t count = (1 << 16) + 7, block = 129, es = DTypeSize(dtype);
  const size_t nb = (count + block - 1) / block;
  std::vector<float> residual(count, 0.0f);
  DeviceBuf dres(nullptr, count * sizeof(float));  // junk: `fresh` must not read it
  for (int step = 0; step < 3; ++step) {
    std::vector<char> g = Input(dtype, count);  // a different gradient each step:
    std::rotate(g.begin(), g.begin() + static_cast<long>(step * 1001 * es), g.end());
    std::vector<char> sent(count * es);
    TernaryFeedbackApply(dtype, g.data(), residual.data(), sent.data(), count);
    DeviceBuf dg(g.data(), g.size()), dsent(nullptr, sent.size());
    ASSERT_TRUE(k->TernaryFeedbackApply(dtype, dg.p, static_cast<float*>(dres.p), step == 0,
                                        dsent.p, count, nullptr).ok());
    ASSERT_EQ(dsent.Get(), sent) << "step " << step;
    std::vector<float> scales(nb);
    TernaryAbsMax(dtype, sent.data(), count, block, scales.data());
    DeviceBuf dscales(scales.data(), nb * sizeof(float));
    const PhiloxStream ph{31, 1, static_cast<uint64_t>(step)};
    std::vector<char> wire(TernaryPackedBytes(count, 2));
    TernaryQuantizePack(dtype, sent.data(), 0, count, block, scales.data(), ph, 2, wire.data());
    TernaryFeedbackUpdate(dtype, sent.data(), count, block, scales.data(), ph, residual.data());
    DeviceBuf dwire(nullptr, wire.size());
    ASSERT_TRUE(k->TernaryQuantizeFeedback(dtype, dsent.p, count, block,
                                           static_cast<const float*>(dscales.p), ph, 1, dwire.p,
                                           static_cast<float*>(dres.p), nullptr).ok());
    ASSERT_EQ(dwire.Get(), wire) << "step " << step;
    ASSERT_EQ(dres.Get(), Bytes(residual)) << "residual, step " << step;
  }
}

// The masked + ternary path: the vector packed through the mask (the masked
// pack kernel), quantized dense, and the final sums dequantized scattered to
// the kept positions with zero-fill.
TEST_P(TernaryCudaTest, PackedAndScatteredMatchCpuBitForBit) {
  std::string why;
  CudaDeviceOps* k = sieve_test::ShippedKernels(&why);
  if (k == nullptr) GTEST_SKIP() << "needs a GPU: " << why;
  const DType dtype = GetParam();
  const size_t count = (1 << 17) + 5, es = DTypeSize(dtype);
  std::vector<char> in = Input(dtype, count);
  DeviceBuf din(in.data(), in.size());
  std::mt19937_64 rng(9);
  for (double density : {0.001, 0.5, 1.0}) {
    std::vector<uint32_t> idx;
    std::vector<uint64_t> bits((count + 63) / 64, 0);
    for (size_t j = 0; j < count; ++j) {
      if (std::uniform_real_distribution<double>(0, 1)(rng) >= density) continue;
      idx.push_back(static_cast<uint32_t>(j));
      bits[j / 64] |= uint64_t{1} << (j % 64);
    }
    const size_t nnz = idx.size(), block = 333, nb = (nnz + block - 1) / block;
    ASSERT_GT(nnz, 2u);
    DeviceBuf didx(idx.data(), nnz * sizeof(uint32_t)), dbits(bits.data(), bits.size() * 8);
    std::vector<char> packed(nnz * es);
    MaskedPack(es, in.data(), idx.data(), nnz, packed.data());
    DeviceBuf dpacked(nullptr, packed.size());
    ASSERT_TRUE(k->MaskedPack(es, din.p, static_cast<const uint32_t*>(didx.p), nnz, dpacked.p,
                              nullptr).ok());
    ASSERT_EQ(dpacked.Get(), packed);
    std::vector<float> scales(nb);
    TernaryAbsMax(dtype, packed.data(), nnz, block, scales.data());
    DeviceBuf dscales(nullptr, nb * sizeof(float));
    auto* ds = static_cast<float*>(dscales.p);
    ASSERT_TRUE(k->TernaryAbsMax(dtype, dpacked.p, nullptr, nnz, block, ds, nullptr).ok());
    ASSERT_EQ(dscales.Get(), Bytes(scales)) << density;
    const int ranks = 4, w = TernaryBits(ranks);
    std::vector<int32_t> sums = Sums(nnz, ranks, nnz);
    std::vector<char> sums_wire(TernaryPackedBytes(nnz, w));
    TernaryPack(TernaryWork::kInt32, sums.data(), nnz, w, sums_wire.data());
    std::vector<char> out(count * es);
    TernaryDequantizeScatter(dtype, TernaryWork::kInt32, sums.data(), 0, block, scales.data(),
                             ranks, bits.data(), 0, count, out.data());
    std::vector<char> junk(count * es, 0x11);
    DeviceBuf dsums(sums_wire.data(), sums_wire.size()), dout(junk.data(), junk.size());
    ASSERT_TRUE(k->TernaryDequantizeScatter(dtype, dsums.p, w, nnz, block, ds, ranks,
                                            static_cast<const uint32_t*>(didx.p),
                                            static_cast<const uint64_t*>(dbits.p), count, dout.p,
                                            nullptr).ok());
    ASSERT_EQ(dout.Get(), out) << density;
  }
}

// Elements whose 16 Philox bits tie with their level (the refinement decides)
// and non-finite elements (NaN / infinity: a NaN scale for their block): the
// device's scales and codes match the CPU's (a NaN matches a NaN).
TEST_P(TernaryCudaTest, TiesAndNonFiniteInputMatchCpu) {
  std::string why;
  CudaDeviceOps* k = sieve_test::ShippedKernels(&why);
  if (k == nullptr) GTEST_SKIP() << "needs a GPU: " << why;
  const DType dtype = GetParam();
  const size_t count = 40007, block = 512, nb = (count + block - 1) / block;
  const PhiloxStream rng{99, 4, 5};
  std::vector<float> f(count);
  for (size_t j = 0; j < count; ++j) {  // level = the element's 16 Philox bits + 1/2: a tie
    const uint32_t h = PhiloxHalf(PhiloxOct(rng, j >> 3), j);
    f[j] = (static_cast<float>(h) + 0.5f) / 65536.0f * (j % 2 == 0 ? 1.0f : -1.0f);
  }
  f[777] = std::numeric_limits<float>::quiet_NaN();
  f[5000] = std::numeric_limits<float>::infinity();
  f[count - 1] = -std::numeric_limits<float>::infinity();
  std::vector<char> in(count * DTypeSize(dtype));
  for (size_t j = 0; j < count; ++j) {
    if (dtype == DType::kFloat32) reinterpret_cast<float*>(in.data())[j] = f[j];
    if (dtype == DType::kFloat16) reinterpret_cast<uint16_t*>(in.data())[j] = FloatToHalf(f[j]);
    if (dtype == DType::kBfloat16) reinterpret_cast<uint16_t*>(in.data())[j] = FloatToBf16(f[j]);
  }
  DeviceBuf din(in.data(), in.size());
  std::vector<float> scales(nb);
  TernaryAbsMax(dtype, in.data(), count, block, scales.data());
  EXPECT_TRUE(std::isnan(scales[777 / block]) && std::isnan(scales[5000 / block]) &&
              std::isnan(scales[nb - 1]));
  DeviceBuf dscales(nullptr, nb * sizeof(float));
  ASSERT_TRUE(
      k->TernaryAbsMax(dtype, din.p, nullptr, count, block, static_cast<float*>(dscales.p), nullptr)
          .ok());
  std::vector<char> got = dscales.Get();
  for (size_t b = 0; b < nb; ++b) {
    float g;
    std::memcpy(&g, got.data() + 4 * b, 4);
    ASSERT_TRUE((std::isnan(g) && std::isnan(scales[b])) || g == scales[b]) << b;
  }
  // With the agreed scales (here: the CPU's uploaded, NaN bits included).
  DeviceBuf dsc(scales.data(), nb * sizeof(float));
  std::vector<char> wire(TernaryPackedBytes(count, 2));
  TernaryQuantizePack(dtype, in.data(), 0, count, block, scales.data(), rng, 2, wire.data());
  DeviceBuf dwire(nullptr, wire.size());
  ASSERT_TRUE(k->TernaryQuantize(dtype, din.p, count, block, static_cast<const float*>(dsc.p),
                                 rng, 1, dwire.p, nullptr).ok());
  ASSERT_EQ(dwire.Get(), wire);
}

// L > 1 levels (sieveAllReduceQuantized): the codes in TernaryBits(L) bits and, with
// error feedback, the residuals g + e - s * q / L, equal to the CPU kernels byte for
// byte; some scales below the block's max so codes reach +-L.
TEST_P(TernaryCudaTest, LevelsMatchCpuBitForBit) {
  std::string why;
  CudaDeviceOps* k = sieve_test::ShippedKernels(&why);
  if (k == nullptr) GTEST_SKIP() << "needs a GPU: " << why;
  const DType dtype = GetParam();
  const size_t count = (1 << 16) + 5, block = 257, nb = (count + block - 1) / block;
  std::vector<char> in = Input(dtype, count);
  std::vector<float> scales(nb);
  TernaryAbsMax(dtype, in.data(), count, block, scales.data());
  for (size_t b = 0; b < nb; b += 3) scales[b] *= 0.75f;
  DeviceBuf din(in.data(), in.size()), dsc(scales.data(), nb * sizeof(float));
  const PhiloxStream rng{5, 3, 99};
  for (int levels : {3, 7, 127}) {
    TernarySource src = TernarySourceOf(dtype, in.data(), nullptr, block, scales.data(), rng);
    src.levels = levels;
    const int w = TernaryBits(levels);
    std::vector<char> wire(TernaryPackedBytes(count, w));
    TernaryQuantizePack(src, 0, count, w, wire.data());
    DeviceBuf dwire(nullptr, wire.size());
    ASSERT_TRUE(k->TernaryQuantize(dtype, din.p, count, block, static_cast<const float*>(dsc.p),
                                   rng, levels, dwire.p, nullptr).ok());
    ASSERT_EQ(dwire.Get(), wire) << "levels " << levels;
    std::vector<float> residual(count);
    for (size_t j = 0; j < count; ++j) residual[j] = 0.001f * static_cast<float>(j % 17);
    DeviceBuf dres(residual.data(), count * sizeof(float)), dwire2(nullptr, wire.size());
    TernaryFeedbackUpdate(dtype, in.data(), count, block, scales.data(), rng, residual.data(),
                          levels);
    ASSERT_TRUE(k->TernaryQuantizeFeedback(dtype, din.p, count, block,
                                           static_cast<const float*>(dsc.p), rng, levels,
                                           dwire2.p, static_cast<float*>(dres.p), nullptr).ok());
    ASSERT_EQ(dwire2.Get(), wire) << "levels " << levels;
    ASSERT_EQ(dres.Get(), Bytes(residual)) << "residual, levels " << levels;
  }
}

INSTANTIATE_TEST_SUITE_P(Types, TernaryCudaTest,
                         ::testing::Values(DType::kFloat32, DType::kFloat16, DType::kBfloat16));

}  // namespace
}  // namespace sieve::kernels
