// ReduceSink against the codec's combine of the whole image: a wire image cut
// into pieces at random byte boundaries, each at a random address, handed over
// in random order, must leave work exactly as one ReduceInto of the whole image
// does, for every dtype and op, and must touch nothing outside its range.
#include "algo/reduce_sink.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "algo/dense_codec.h"
#include "kernels/dtype.h"

namespace sieve::algo {
namespace {

using kernels::DType;
using kernels::RedOp;

// n random elements of `dtype`; floats are small integers and halves (no NaN,
// so results compare by their bits).
std::vector<unsigned char> Random(DType dtype, size_t n, std::mt19937_64& rng) {
  const size_t size = kernels::DTypeSize(dtype);
  std::vector<unsigned char> v(n * size);
  std::uniform_int_distribution<int> small(-64, 64);
  for (size_t i = 0; i < n; ++i) {
    unsigned char* e = v.data() + i * size;
    const float f = static_cast<float>(small(rng)) * 0.5f;
    switch (dtype) {
      case DType::kFloat32:
        std::memcpy(e, &f, 4);
        break;
      case DType::kFloat64: {
        const double d = f;
        std::memcpy(e, &d, 8);
        break;
      }
      case DType::kFloat16: {
        const uint16_t h = kernels::FloatToHalf(f);
        std::memcpy(e, &h, 2);
        break;
      }
      case DType::kBfloat16: {
        const uint16_t h = kernels::FloatToBf16(f);
        std::memcpy(e, &h, 2);
        break;
      }
      default:
        for (size_t b = 0; b < size; ++b) e[b] = static_cast<unsigned char>(rng());
    }
  }
  return v;
}

TEST(ReduceSinkTest, PiecesInAnyOrderAtAnyAddressEqualTheWholeImage) {
  std::mt19937_64 rng(20261205);
  const DType dtypes[] = {DType::kInt8,    DType::kUint8,   DType::kInt32,   DType::kUint32,
                          DType::kInt64,   DType::kUint64,  DType::kFloat16, DType::kFloat32,
                          DType::kFloat64, DType::kBfloat16};
  for (DType dtype : dtypes) {
    for (RedOp op : {RedOp::kSum, RedOp::kMax, RedOp::kMin, RedOp::kProd}) {
      const size_t size = kernels::DTypeSize(dtype);
      const size_t total = 1 + rng() % 5000, offset = rng() % total, elems = total - offset;
      const std::vector<unsigned char> input = Random(dtype, total, rng);
      const std::vector<unsigned char> wire = Random(dtype, elems, rng);
      const std::vector<unsigned char> before = Random(dtype, total, rng);

      // Expected: one combine of the whole image.
      std::vector<unsigned char> expected = before;
      DenseCodec whole(input.data(), expected.data(), dtype, op, 2);
      whole.ReduceInto(offset, elems, 2, wire.data(), /*first=*/true);

      // Pieces: random cuts, shuffled, each copied to a random misalignment.
      std::vector<size_t> cuts = {0, wire.size()};
      for (int c = 0, pieces = static_cast<int>(rng() % 40); c < pieces; ++c)
        cuts.push_back(rng() % (wire.size() + 1));
      std::sort(cuts.begin(), cuts.end());
      cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
      std::vector<size_t> order(cuts.size() - 1);
      for (size_t i = 0; i < order.size(); ++i) order[i] = i;
      std::shuffle(order.begin(), order.end(), rng);

      std::vector<unsigned char> work = before;
      DenseCodec codec(input.data(), work.data(), dtype, op, 2);
      ReduceSink sink;
      sink.Start(&codec, offset, elems, 2);
      std::vector<unsigned char> at(wire.size() + 16);
      for (size_t i : order) {
        const size_t from = cuts[i], len = cuts[i + 1] - cuts[i];
        unsigned char* p = at.data() + rng() % 8;
        std::memcpy(p, wire.data() + from, len);
        sink.Consume(from, p, len);
      }
      EXPECT_TRUE(work == expected)
          << kernels::DTypeName(dtype) << " " << kernels::RedOpName(op) << ", " << elems
          << " elements of " << size << " bytes at " << offset << ", " << order.size() << " pieces";
    }
  }
}

TEST(ReduceSinkTest, NothingBeyondTheImageIsCombined) {
  std::vector<float> input(8, 1.0f), work(8, 0.0f), wire(16, 2.0f);
  DenseCodec codec(input.data(), work.data(), DType::kFloat32, RedOp::kSum, 2);
  ReduceSink sink;
  sink.Start(&codec, 2, 4, 2);
  sink.Consume(0, wire.data(), wire.size() * sizeof(float));  // longer than the image
  EXPECT_EQ(work, (std::vector<float>{0, 0, 3, 3, 3, 3, 0, 0}));
}

}  // namespace
}  // namespace sieve::algo
