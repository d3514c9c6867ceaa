// CUDA ternary kernels against the CPU kernels, byte for byte, for every
// floating dtype, several block sizes and unaligned ranges. Skipped (with the
// reason) without a GPU.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include "support/gpu.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "kernels/ternary.h"
#include "kernels/ternary_cuda.h"
#include "kernels/ternary_feedback.h"

namespace sieve::kernels {
namespace {

using sieve_test::HaveGpu;

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

class TernaryCudaTest : public ::testing::TestWithParam<DType> {};

TEST_P(TernaryCudaTest, MatchesCpuBitForBit) {
  std::string why;
  if (!HaveGpu(&why)) GTEST_SKIP() << "needs a GPU: " << why;
  DType dtype = GetParam();
  const size_t count = (1 << 18) + 3, offset = 5, elems = count - 11;
  std::vector<char> in = Input(dtype, count);
  DeviceBuf din(in.data(), in.size());
  PhiloxStream rng{77, 2, 123456789012ull};
  for (size_t block : {size_t{1}, size_t{7}, size_t{2048}}) {
    size_t nb = (count + block - 1) / block;
    std::vector<float> scales(nb);
    TernaryAbsMax(dtype, in.data(), count, block, scales.data());
    DeviceBuf dscales(nullptr, nb * sizeof(float));
    ASSERT_EQ(TernaryAbsMaxCuda(dtype, din.p, nullptr, count, block, static_cast<float*>(dscales.p),
                                nullptr), 0);
    ASSERT_EQ(dscales.Get(), std::vector<char>(reinterpret_cast<char*>(scales.data()),
                                               reinterpret_cast<char*>(scales.data() + nb)));
    // Quantize + 2-bit pack.
    std::vector<char> wire(TernaryPackedBytes(elems, 2));
    TernaryQuantizePack(dtype, in.data(), offset, elems, block, scales.data(), rng, 2, wire.data());
    DeviceBuf dwire(nullptr, wire.size());
    ASSERT_EQ(TernaryQuantizePackCuda(dtype, din.p, nullptr, offset, elems, block,
                                      static_cast<const float*>(dscales.p), rng, 2, dwire.p,
                                      nullptr), 0);
    ASSERT_EQ(dwire.Get(), wire) << "block " << block;
    // Quantize + add the partial, repack in 3 bits, unpack-accumulate, dequantize.
    std::vector<int8_t> work(elems);
    TernaryQuantizeAdd(dtype, in.data(), offset, elems, block, scales.data(), rng, wire.data(), 2,
                       TernaryWork::kInt8, work.data());
    DeviceBuf dwork(nullptr, elems);
    ASSERT_EQ(TernaryQuantizeAddCuda(dtype, din.p, nullptr, offset, elems, block,
                                     static_cast<const float*>(dscales.p), rng, dwire.p, 2,
                                     TernaryWork::kInt8, dwork.p, nullptr), 0);
    std::vector<char> w8 = dwork.Get();
    ASSERT_EQ(std::vector<int8_t>(w8.begin(), w8.end()), work);
    std::vector<char> w3(TernaryPackedBytes(elems, 3));
    TernaryPack(TernaryWork::kInt8, work.data(), elems, 3, w3.data());
    DeviceBuf dw3(nullptr, w3.size());
    ASSERT_EQ(TernaryPackCuda(TernaryWork::kInt8, dwork.p, elems, 3, dw3.p, nullptr), 0);
    ASSERT_EQ(dw3.Get(), w3);
    TernaryUnpack(TernaryWork::kInt8, w3.data(), elems, 3, true, work.data());
    ASSERT_EQ(TernaryUnpackCuda(TernaryWork::kInt8, dw3.p, elems, 3, true, dwork.p, nullptr), 0);
    w8 = dwork.Get();
    ASSERT_EQ(std::vector<int8_t>(w8.begin(), w8.end()), work);
    std::vector<char> out(elems * DTypeSize(dtype));
    TernaryDequantize(dtype, TernaryWork::kInt8, work.data(), elems, block, scales.data(), 3,
                      out.data());
    DeviceBuf dout(nullptr, out.size());
    ASSERT_EQ(TernaryDequantizeCuda(dtype, TernaryWork::kInt8, dwork.p, elems, block,
                                    static_cast<const float*>(dscales.p), 3, dout.p, nullptr), 0);
    ASSERT_EQ(dout.Get(), out);
  }
}

// Error feedback over several steps, the residual carried on the device:
// g + e_prev, then quantize with the residual update fused, equal to the CPU
// kernels (the host path) byte for byte, residuals included.
TEST_P(TernaryCudaTest, FeedbackMatchesCpuBitForBit) {
  std::string why;
  if (!HaveGpu(&why)) GTEST_SKIP() << "needs a GPU: " << why;
  DType dtype = GetParam();
  const size_t count = (1 << 16) + 7, block = 129, es = DTypeSize(dtype);
  const size_t nb = (count + block - 1) / block;
  std::vector<float> residual(count, 0.0f);
  DeviceBuf dres(residual.data(), count * sizeof(float));
  for (int step = 0; step < 3; ++step) {
    std::vector<char> g = Input(dtype, count);  // a different gradient each step:
    std::rotate(g.begin(), g.begin() + static_cast<long>(step * 1001 * es), g.end());
    std::vector<char> sent(count * es);
    TernaryFeedbackApply(dtype, g.data(), residual.data(), sent.data(), count);
    DeviceBuf dg(g.data(), g.size()), dsent(nullptr, sent.size());
    ASSERT_EQ(TernaryFeedbackApplyCuda(dtype, dg.p, static_cast<float*>(dres.p), dsent.p, count,
                                       nullptr), 0);
    ASSERT_EQ(dsent.Get(), sent) << "step " << step;
    std::vector<float> scales(nb);
    TernaryAbsMax(dtype, sent.data(), count, block, scales.data());
    DeviceBuf dscales(scales.data(), nb * sizeof(float));
    const PhiloxStream ph{31, 1, static_cast<uint64_t>(step)};
    std::vector<char> wire(TernaryPackedBytes(count, 2));
    TernaryQuantizePack(dtype, sent.data(), 0, count, block, scales.data(), ph, 2, wire.data());
    TernaryFeedbackUpdate(dtype, sent.data(), count, block, scales.data(), ph, residual.data());
    DeviceBuf dwire(nullptr, wire.size());
    ASSERT_EQ(TernaryQuantizeFeedbackCuda(dtype, dsent.p, count, block,
                                          static_cast<const float*>(dscales.p), ph, dwire.p,
                                          static_cast<float*>(dres.p), nullptr), 0);
    ASSERT_EQ(dwire.Get(), wire) << "step " << step;
    ASSERT_EQ(dres.Get(), std::vector<char>(reinterpret_cast<char*>(residual.data()),
                                            reinterpret_cast<char*>(residual.data() + count)))
        << "residual, step " << step;
  }
}

// The masked + ternary kernels: quantization gathered through a mask and the
// last hop's dequantize scattered with zero-fill, per packed range.
TEST_P(TernaryCudaTest, GatheredAndScatteredMatchCpuBitForBit) {
  std::string why;
  if (!HaveGpu(&why)) GTEST_SKIP() << "needs a GPU: " << why;
  DType dtype = GetParam();
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
    const size_t nnz = idx.size(), block = 333;
    ASSERT_GT(nnz, 2u);
    DeviceBuf didx(idx.data(), nnz * sizeof(uint32_t)), dbits(bits.data(), bits.size() * 8);
    const uint32_t* di = static_cast<const uint32_t*>(didx.p);
    size_t nb = (nnz + block - 1) / block;
    std::vector<float> scales(nb);
    TernaryAbsMax(dtype, in.data(), idx.data(), nnz, block, scales.data());
    DeviceBuf dscales(nullptr, nb * sizeof(float));
    ASSERT_EQ(TernaryAbsMaxCuda(dtype, din.p, di, nnz, block, static_cast<float*>(dscales.p),
                                nullptr), 0);
    ASSERT_EQ(dscales.Get(), std::vector<char>(reinterpret_cast<char*>(scales.data()),
                                               reinterpret_cast<char*>(scales.data() + nb)));
    PhiloxStream ps{5, 1, 99};
    const size_t offset = nnz / 3, elems = nnz - offset;
    std::vector<char> wire(TernaryPackedBytes(elems, 2));
    TernaryQuantizePack(dtype, in.data(), idx.data(), offset, elems, block, scales.data(), ps, 2,
                        wire.data());
    DeviceBuf dwire(nullptr, wire.size());
    const float* dsc = static_cast<const float*>(dscales.p);
    ASSERT_EQ(TernaryQuantizePackCuda(dtype, din.p, di, offset, elems, block, dsc, ps, 2,
                                      dwire.p, nullptr), 0);
    ASSERT_EQ(dwire.Get(), wire) << density;
    std::vector<int8_t> work(nnz);
    TernaryQuantizeAdd(dtype, in.data(), idx.data(), 0, nnz, block, scales.data(), ps, nullptr,
                       2, TernaryWork::kInt8, work.data());
    DeviceBuf dwork(nullptr, nnz);
    ASSERT_EQ(TernaryQuantizeAddCuda(dtype, din.p, di, 0, nnz, block, dsc, ps, nullptr, 2,
                                     TernaryWork::kInt8, dwork.p, nullptr), 0);
    std::vector<char> w8 = dwork.Get();
    ASSERT_EQ(std::vector<int8_t>(w8.begin(), w8.end()), work);
    // Two packed ranges, as two segments of the last hop deliver them.
    std::vector<char> out(count * es, 0x11);
    DeviceBuf dout(out.data(), out.size());
    for (size_t r = 0; r < 2; ++r) {
      size_t a = r == 0 ? 0 : offset, b = r == 0 ? offset : nnz, begin, end;
      begin = a == 0 ? 0 : idx[a - 1] + 1;
      end = b == nnz ? count : idx[b - 1] + 1;
      TernaryDequantizeScatter(dtype, TernaryWork::kInt8, work.data() + a, a, block,
                               scales.data(), 4, bits.data(), begin, end, out.data());
      ASSERT_EQ(TernaryDequantizeScatterCuda(dtype, TernaryWork::kInt8,
                                             static_cast<char*>(dwork.p) + a, a, b - a, block,
                                             dsc, 4, di, static_cast<const uint64_t*>(dbits.p),
                                             begin, end, dout.p, nullptr), 0);
    }
    ASSERT_EQ(dout.Get(), out) << density;
  }
}

// Elements whose 16 Philox bits tie with their level (the refinement decides)
// and non-finite elements (NaN / infinity: a NaN scale for their block): the
// device's scales, codes and results match the CPU's (a NaN matches a NaN).
TEST_P(TernaryCudaTest, TiesAndNonFiniteInputMatchCpu) {
  std::string why;
  if (!HaveGpu(&why)) GTEST_SKIP() << "needs a GPU: " << why;
  const DType dtype = GetParam();
  const size_t count = 40007, block = 512;
  const PhiloxStream rng{99, 4, 5};
  std::vector<float> f(count);
  for (size_t j = 0; j < count; ++j) {
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
  const size_t nb = (count + block - 1) / block;
  std::vector<float> scales(nb);
  TernaryAbsMax(dtype, in.data(), count, block, scales.data());
  EXPECT_TRUE(std::isnan(scales[777 / block]) && std::isnan(scales[5000 / block]) &&
              std::isnan(scales[nb - 1]));
  DeviceBuf dscales(nullptr, nb * sizeof(float));
  ASSERT_EQ(TernaryAbsMaxCuda(dtype, din.p, nullptr, count, block, static_cast<float*>(dscales.p),
                              nullptr), 0);
  std::vector<char> got = dscales.Get();
  for (size_t b = 0; b < nb; ++b) {
    float g;
    std::memcpy(&g, got.data() + 4 * b, 4);
    ASSERT_TRUE((std::isnan(g) && std::isnan(scales[b])) || g == scales[b]) << b;
  }
  // With the agreed scales (here: upload the CPU's, NaN bits included).
  DeviceBuf dsc(scales.data(), nb * sizeof(float));
  std::vector<char> wire(TernaryPackedBytes(count, 2));
  TernaryQuantizePack(dtype, in.data(), 0, count, block, scales.data(), rng, 2, wire.data());
  DeviceBuf dwire(nullptr, wire.size());
  ASSERT_EQ(TernaryQuantizePackCuda(dtype, din.p, nullptr, 0, count, block,
                                    static_cast<const float*>(dsc.p), rng, 2, dwire.p, nullptr), 0);
  ASSERT_EQ(dwire.Get(), wire);
}

INSTANTIATE_TEST_SUITE_P(Types, TernaryCudaTest,
                         ::testing::Values(DType::kFloat32, DType::kFloat16, DType::kBfloat16));

}  // namespace
}  // namespace sieve::kernels
