// Zero-pattern kernels against a per-element loop, for every element size,
// odd counts, random patterns (with -0.0 counting as non-zero) and masks.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "kernels/nonzero.h"

namespace sieve::kernels {
namespace {

bool ElementNonzero(const char* p, size_t esize) {
  for (size_t b = 0; b < esize; ++b)
    if (p[b] != 0) return true;
  return false;
}

TEST(NonzeroTest, BitmapAndOutsideCheckMatchAPerElementLoop) {
  std::mt19937_64 rng(11);
  for (size_t esize : {1, 2, 4, 8}) {
    for (size_t count : {1, 63, 64, 65, 1000, 4099}) {
      std::vector<char> data(count * esize, 0);
      for (size_t j = 0; j < count; ++j)
        if (rng() % 3 == 0) data[j * esize + rng() % esize] = static_cast<char>(1 + rng() % 255);
      float minus_zero = -0.0f;
      if (esize == 4) std::memcpy(data.data(), &minus_zero, 4);  // a non-zero bit pattern
      std::vector<uint64_t> bits((count + 63) / 64, ~uint64_t{0});
      NonzeroBitmap(esize, data.data(), count, bits.data());
      for (size_t j = 0; j < count; ++j)
        ASSERT_EQ((bits[j / 64] >> (j % 64)) & 1, ElementNonzero(&data[j * esize], esize))
            << "esize " << esize << " count " << count << " j " << j;
      for (size_t j = count; j < bits.size() * 64; ++j) ASSERT_EQ((bits[j / 64] >> (j % 64)) & 1, 0u);
      // The pattern itself as mask: nothing outside; drop one kept bit: something outside.
      EXPECT_FALSE(AnyNonzeroOutside(esize, data.data(), bits.data(), count));
      for (size_t j = 0; j < count; ++j) {
        if (((bits[j / 64] >> (j % 64)) & 1) == 0) continue;
        std::vector<uint64_t> fewer = bits;
        fewer[j / 64] &= ~(uint64_t{1} << (j % 64));
        EXPECT_TRUE(AnyNonzeroOutside(esize, data.data(), fewer.data(), count)) << j;
        break;
      }
    }
  }
}

}  // namespace
}  // namespace sieve::kernels
