// Mask normalization (bitmap and byte forms agree, tail bits ignored), the
// agreement hash (one flipped bit or another count changes it), the index list.
#include <gtest/gtest.h>

#include <vector>

#include "mask/mask_bits.h"

namespace sieve::mask {
namespace {

TEST(MaskBitsTest, BitmapAndBytesNormalizeToTheSameWordsWithTheTailCleared) {
  const size_t count = 131;
  std::vector<uint8_t> bytes(count), bitmap((count + 7) / 8, 0xff);  // tail bits set on purpose
  for (size_t j = 0; j < count; ++j) {
    bytes[j] = static_cast<uint8_t>((j * 7) % 3 == 0 ? 5 : 0);
    if (bytes[j] == 0) bitmap[j / 8] &= static_cast<uint8_t>(~(1u << (j % 8)));
  }
  std::vector<uint64_t> a, b;
  Normalize(bytes.data(), Format::kBytes, count, &a);
  Normalize(bitmap.data(), Format::kBitmap, count, &b);
  EXPECT_EQ(a, b);
  EXPECT_EQ(b.back() >> (count % 64), 0u);
}

TEST(MaskBitsTest, HashSeesOneFlippedBitAndTheCount) {
  std::vector<uint64_t> bits(100, 0x0123456789abcdefull);
  uint64_t h = MaskHash(6400, bits);
  EXPECT_EQ(h, MaskHash(6400, bits));
  EXPECT_NE(h, MaskHash(6399, bits));
  bits[57] ^= uint64_t{1} << 13;
  EXPECT_NE(h, MaskHash(6400, bits));
}

TEST(MaskBitsTest, IndexListsKeptElementsInOrder) {
  std::vector<uint8_t> bytes = {0, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                                0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                                0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                                0, 1, 0, 1};
  std::vector<uint64_t> bits;
  Normalize(bytes.data(), Format::kBytes, bytes.size(), &bits);
  std::vector<uint32_t> idx;
  ASSERT_TRUE(BuildIndex(bits, bytes.size(), &idx).ok());
  EXPECT_EQ(idx, (std::vector<uint32_t>{1, 2, 64, 66}));
}

}  // namespace
}  // namespace sieve::mask
