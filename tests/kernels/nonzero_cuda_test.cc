// The zero-pattern kernels libsieve ships (launched by CudaDeviceOps, as the
// mask tracker does) against the CPU kernels, bit for bit: every element
// size, odd counts, data mixing zeros, -0.0 (the sign bit alone), NaNs and
// random values, whole zero words and whole non-zero words. Skipped (with
// the reason) without a GPU.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include "support/gpu.h"
#include "support/shipped_kernels.h"

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "kernels/nonzero.h"

namespace sieve::kernels {
namespace {

using sieve_test::FromDevice;
using sieve_test::ToDevice;

// One element of `esize` bytes (little-endian) of a random kind; runs of
// 64 zeros or non-zeros now and then, so whole bitmap words are all 0 or all 1.
void FillMixed(size_t esize, size_t count, std::mt19937_64& rng, std::vector<char>* data) {
  data->assign(count * esize, 0);
  const uint64_t sign = uint64_t{1} << (8 * esize - 1);
  // A quiet NaN of the float type of this width (f16 for 2 bytes); 1 byte: any top bits.
  const uint64_t nan = esize == 8   ? 0x7ff8000000000000ull
                       : esize == 4 ? 0x7fc00000ull
                       : esize == 2 ? 0x7e00ull
                                    : 0x7full;
  for (size_t j = 0; j < count;) {
    const unsigned kind = rng() % 10;
    const size_t run = rng() % 16 == 0 ? 64 : 1;
    for (size_t r = 0; r < run && j < count; ++r, ++j) {
      uint64_t v = 0;
      if (kind < 4)
        v = 0;
      else if (kind < 6)
        v = sign;  // -0.0
      else if (kind < 7)
        v = nan | (rng() & 1 ? sign : 0);
      else
        v = rng() & (esize == 8 ? ~uint64_t{0} : (uint64_t{1} << (8 * esize)) - 1);
      std::memcpy(data->data() + j * esize, &v, esize);  // little-endian low bytes
    }
  }
}

class NonzeroCudaTest : public ::testing::TestWithParam<size_t> {};

TEST_P(NonzeroCudaTest, MatchesCpuKernelsBitForBit) {
  std::string why;
  sieve::gpu::CudaDeviceOps* k = sieve_test::ShippedKernels(&why);
  if (k == nullptr) GTEST_SKIP() << "no usable GPU: " << why;
  const size_t esize = GetParam();
  const uint64_t seed = std::random_device{}();
  std::mt19937_64 rng(seed);
  for (size_t count : {size_t{1}, size_t{31}, size_t{63}, size_t{65}, size_t{4099},
                       size_t{100003} + 2 * (rng() % 1000)}) {
    const size_t words = (count + 63) / 64;
    std::vector<char> data;
    FillMixed(esize, count, rng, &data);
    std::vector<uint64_t> want(words), junk(words, 0xa5a5a5a5a5a5a5a5ull);
    NonzeroBitmap(esize, data.data(), count, want.data());
    char* d_data = ToDevice(data);
    uint64_t* d_bits = ToDevice(junk);  // junk: every word must be overwritten
    uint32_t* d_any = ToDevice(std::vector<uint32_t>{7});
    ASSERT_TRUE(d_data && d_bits && d_any);
    ASSERT_TRUE(k->NonzeroBitmap(esize, d_data, count, d_bits, nullptr).ok());
    std::vector<char> got = FromDevice(d_bits, words * 8);
    EXPECT_EQ(0, std::memcmp(got.data(), want.data(), words * 8))
        << esize << "-byte, count " << count << ", seed " << seed;
    // Masks: the pattern itself (nothing outside), all kept, one kept bit
    // dropped (something outside), and random ones (whatever the CPU says).
    std::vector<std::vector<uint64_t>> masks = {want, std::vector<uint64_t>(words, ~uint64_t{0})};
    for (size_t j = 0; j < count; ++j)
      if ((want[j / 64] >> (j % 64)) & 1) {
        masks.push_back(want);
        masks.back()[j / 64] &= ~(uint64_t{1} << (j % 64));
        break;
      }
    for (int r = 0; r < 4; ++r) {
      masks.emplace_back(words);
      for (auto& m : masks.back()) m = rng() | (r % 2 ? rng() : ~uint64_t{0} << (rng() % 64));
    }
    for (size_t m = 0; m < masks.size(); ++m) {
      uint64_t* d_mask = ToDevice(masks[m]);
      ASSERT_TRUE(d_mask);
      ASSERT_TRUE(k->AnyNonzeroOutside(esize, d_data, d_mask, count, d_any, nullptr).ok());
      uint32_t any = 7;
      std::memcpy(&any, FromDevice(d_any, 4).data(), 4);
      EXPECT_EQ(any, AnyNonzeroOutside(esize, data.data(), masks[m].data(), count) ? 1u : 0u)
          << esize << "-byte, count " << count << ", mask " << m << ", seed " << seed;
      cudaFree(d_mask);
    }
    for (void* p :
         {static_cast<void*>(d_data), static_cast<void*>(d_bits), static_cast<void*>(d_any)})
      cudaFree(p);
  }
  EXPECT_FALSE(k->NonzeroBitmap(3, nullptr, 1, nullptr, nullptr).ok());  // no 3-byte elements
}

INSTANTIATE_TEST_SUITE_P(ElementSizes, NonzeroCudaTest, ::testing::Values(1, 2, 4, 8));

}  // namespace
}  // namespace sieve::kernels
