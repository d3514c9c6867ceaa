// The pieces of the pipelined scale agreement: every block in exactly one
// piece, and no ring segment ever needs a piece later than its own index (so
// segment s starts as soon as pieces 0..s have arrived).
#include "ternary/ternary_scales.h"

#include <gtest/gtest.h>

#include "algo/one_shot.h"
#include "algo/ring_pattern.h"
#include "ternary/ternary_codec.h"

namespace sieve::algo {
namespace {

void CheckPieces(size_t elems, size_t block, int n, size_t segments) {
  SCOPED_TRACE(testing::Message() << "elems " << elems << " block " << block << " n " << n
                                  << " segments " << segments);
  const std::vector<size_t> bounds = BalancedSplit(elems, n);
  const ScalePieces p = CutScalePieces(elems, block, bounds, segments);
  ASSERT_EQ(p.nblocks, (elems + block - 1) / block);
  ASSERT_EQ(p.runs.size(), segments);
  // Every block once, in ascending runs, counted.
  std::vector<int> seen(p.nblocks, 0);
  for (size_t s = 0; s < segments; ++s) {
    size_t count = 0, last_end = 0;
    for (const auto& run : p.runs[s]) {
      ASSERT_LT(run.first, run.second);
      ASSERT_LE(run.second, p.nblocks);
      ASSERT_GE(run.first, last_end);
      last_end = run.second;
      for (size_t k = run.first; k < run.second; ++k) {
        ++seen[k];
        EXPECT_EQ(p.piece_of[k], s);
      }
      count += run.second - run.first;
    }
    EXPECT_EQ(p.count[s], count);
  }
  for (size_t k = 0; k < p.nblocks; ++k) EXPECT_EQ(seen[k], 1) << "block " << k;
  // Segment s of any chunk only needs pieces 0..s.
  for (int c = 0; c < n; ++c) {
    const size_t len = bounds[c + 1] - bounds[c];
    for (size_t s = 0; s < segments; ++s) {
      size_t b, e;
      SegmentRange(len, segments, s, &b, &e);
      if (b == e) continue;
      for (size_t k = (bounds[c] + b) / block; k <= (bounds[c] + e - 1) / block; ++k)
        EXPECT_LE(p.piece_of[k], s) << "chunk " << c << " segment " << s << " block " << k;
    }
  }
}

TEST(TernaryScalePiecesTest, EveryBlockOnceAndNoSegmentWaitsForALaterPiece) {
  for (size_t elems : {size_t{0}, size_t{1}, size_t{5}, size_t{4097}, size_t{100003}})
    for (size_t block : {size_t{1}, size_t{7}, size_t{2048}})
      for (int n : {2, 3, 4, 8})
        for (size_t segments : {size_t{1}, size_t{3}, size_t{8}}) CheckPieces(elems, block, n, segments);
}

// A block that straddles two chunks is needed by the second chunk's first
// segment: it goes in piece 0, not in the first chunk's last piece.
TEST(TernaryScalePiecesTest, BlockAcrossChunksGoesWithTheEarlierSegment) {
  const ScalePieces p = CutScalePieces(20, 4, {0, 10, 20}, 2);  // block 2 = elements 8..11
  EXPECT_EQ(p.piece_of[2], 0u);
  EXPECT_EQ(p.piece_of[0], 0u);
  EXPECT_EQ(p.piece_of[1], 0u);  // elements 4..7: chunk 0's segment 0 (0..4) ends at 5
  EXPECT_EQ(p.piece_of[4], 1u);  // elements 16..19: chunk 1's segment 1 (15..19)
}

// The one-shot's messages: its segments cover [0, count) in order, each image at
// most the segment size (one range when it fits or with no size given), and the
// scale pieces cut for it (one chunk, as TernaryCall cuts them) give segment s
// exactly the blocks it is the first to reach, so it waits for piece s at most.
TEST(OneShotSegmentsTest, EachMessageFitsASegmentAndNeedsNoLaterPiece) {
  const TernaryCodec codec(TernaryInput{}, TernaryOutput{}, nullptr, 4);  // sizes only
  for (size_t count : {size_t{0}, size_t{1}, size_t{5}, size_t{4097}, size_t{100003}})
    for (size_t seg : {size_t{0}, size_t{1}, size_t{512}, size_t{65536}}) {
      SCOPED_TRACE(testing::Message() << "count " << count << " segment " << seg);
      const std::vector<size_t> b = OneShotSegments(codec, count, seg);
      ASSERT_GE(b.size(), 2u);
      EXPECT_EQ(b.front(), 0u);
      EXPECT_EQ(b.back(), count);
      const size_t segments = b.size() - 1;
      if (seg == 0 || codec.WireBytes(count, 1) <= seg) {
        EXPECT_EQ(segments, 1u);
      }
      for (size_t s = 0; s < segments; ++s) {
        ASSERT_LE(b[s], b[s + 1]);
        // Within a byte of the segment (the split is even in elements, 4 codes a byte).
        if (seg >= 1 && b[s + 1] > b[s]) {
          EXPECT_LE(codec.WireBytes(b[s + 1] - b[s], 1), seg + 1);
        }
      }
      if (count == 0) continue;
      const ScalePieces p = CutScalePieces(count, 7, {0, count}, segments);
      for (size_t s = 0; s < segments; ++s)
        for (size_t i = b[s]; i < b[s + 1]; ++i) ASSERT_LE(p.piece_of[i / 7], s) << "element " << i;
    }
}

}  // namespace
}  // namespace sieve::algo
