// Exhaustive tests of the pure ring and tree arithmetic: chunk schedules of
// reduce-scatter/all-gather simulated with contribution sets, range splits, tree shape.
#include "algo/ring_pattern.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <queue>
#include <vector>

#include "algo/tree.h"

namespace sieve::algo {
namespace {

constexpr int kMaxRanks = 64;

// A set of contributing ranks (n <= 64).
using Mask = uint64_t;
Mask All(int n) { return n == 64 ? ~Mask{0} : (Mask{1} << n) - 1; }

TEST(RingPatternTest, NextAndPrevAreInverse) {
  for (int n = 1; n <= kMaxRanks; ++n) {
    for (int r = 0; r < n; ++r) {
      EXPECT_EQ(RingNext(r, n), (r + 1) % n);
      EXPECT_EQ(RingPrev(RingNext(r, n), n), r);
      EXPECT_EQ(RingNext(RingPrev(r, n), n), r);
    }
  }
  EXPECT_EQ(Mod(-1, 5), 4);
  EXPECT_EQ(Mod(-11, 5), 4);
  EXPECT_EQ(Mod(12, 5), 2);
}

TEST(RingPatternTest, ReduceScatterCombinesEveryContributionOnce) {
  for (int n = 1; n <= kMaxRanks; ++n) {
    // acc[r][c]: the contributions rank r's copy of chunk c carries.
    std::vector<std::vector<Mask>> acc(n, std::vector<Mask>(n));
    for (int r = 0; r < n; ++r)
      for (int c = 0; c < n; ++c) acc[r][c] = Mask{1} << r;
    // receivers[c]: the ranks that received chunk c and combined it, in order.
    std::vector<std::vector<int>> receivers(n);
    std::vector<int> last_recv(n, -1);
    for (int k = 0; k + 1 < n; ++k) {
      // All sends of a step happen before any combine of that step.
      std::vector<Mask> sent(n);
      for (int r = 0; r < n; ++r) {
        int c = RsSendChunk(r, k, n);
        ASSERT_GE(c, 0);
        ASSERT_LT(c, n);
        // From step 1 on a rank forwards what it received and combined one step earlier.
        if (k > 0) {
          ASSERT_EQ(c, last_recv[r]) << "n=" << n << " r=" << r << " k=" << k;
        }
        sent[r] = acc[r][c];
      }
      for (int r = 0; r < n; ++r) {
        int next = RingNext(r, n);
        int c = RsSendChunk(r, k, n);
        ASSERT_EQ(RsRecvChunk(next, k, n), c) << "n=" << n << " r=" << r << " k=" << k;
        ASSERT_EQ(acc[next][c] & sent[r], Mask{0})
            << "contribution combined twice: n=" << n << " chunk " << c << " step " << k;
        acc[next][c] |= sent[r];
        receivers[c].push_back(next);
        last_recv[next] = c;
      }
    }
    for (int r = 0; r < n; ++r) {
      ASSERT_EQ(acc[r][r], All(n)) << "n=" << n << " rank " << r;
      if (n > 1) {
        EXPECT_EQ(RsRecvChunk(r, n - 2, n), r);
      }
    }
    for (int c = 0; c < n; ++c) {
      const std::vector<int>& chain = receivers[c];
      ASSERT_EQ(chain.size(), static_cast<size_t>(n - 1)) << "n=" << n << " chunk " << c;
      if (n == 1) continue;
      EXPECT_EQ(chain.back(), c);
      Mask seen = 0;
      for (size_t i = 0; i < chain.size(); ++i) {
        EXPECT_EQ(seen & (Mask{1} << chain[i]), Mask{0}) << "n=" << n << " chunk " << c;
        seen |= Mask{1} << chain[i];
        if (i > 0) {
          EXPECT_EQ(chain[i], RingNext(chain[i - 1], n));
        }
      }
    }
  }
}

TEST(RingPatternTest, AllGatherDeliversEveryChunkOnce) {
  for (int n = 1; n <= kMaxRanks; ++n) {
    // After reduce-scatter rank r holds chunk r.
    std::vector<std::vector<int>> received(n, std::vector<int>(n, 0));
    std::vector<Mask> have(n);
    for (int r = 0; r < n; ++r) have[r] = Mask{1} << r;
    for (int k = 0; k + 1 < n; ++k) {
      std::vector<int> sent(n);
      for (int r = 0; r < n; ++r) {
        sent[r] = AgSendChunk(r, k, n);
        ASSERT_NE(have[r] & (Mask{1} << sent[r]), Mask{0})
            << "rank sends a chunk it lacks: n=" << n << " r=" << r << " k=" << k;
      }
      for (int r = 0; r < n; ++r) {
        int next = RingNext(r, n);
        ASSERT_EQ(AgRecvChunk(next, k, n), sent[r]) << "n=" << n << " r=" << r << " k=" << k;
        ++received[next][sent[r]];
        have[next] |= Mask{1} << sent[r];
      }
    }
    for (int r = 0; r < n; ++r) {
      EXPECT_EQ(have[r], All(n)) << "n=" << n << " rank " << r;
      for (int c = 0; c < n; ++c)
        EXPECT_EQ(received[r][c], c == r ? 0 : 1) << "n=" << n << " rank " << r << " chunk " << c;
    }
    // The first all-gather send is the chunk reduce-scatter completed.
    for (int r = 0; r < n; ++r) EXPECT_EQ(AgSendChunk(r, 0, n), r);
  }
}

const size_t kCounts[] = {0, 1, 7, 1023, (size_t{1} << 20) | 3};

// Checks that `bounds` (parts+1 monotone boundaries) split [0, count) with every
// element covered exactly once and part sizes within 1 of each other.
void ExpectPartition(const std::vector<size_t>& bounds, size_t count, int parts) {
  ASSERT_EQ(bounds.size(), static_cast<size_t>(parts + 1));
  EXPECT_EQ(bounds.front(), 0u);
  EXPECT_EQ(bounds.back(), count);
  std::vector<uint8_t> hits(count, 0);
  size_t lo = SIZE_MAX, hi = 0;
  for (int i = 0; i < parts; ++i) {
    ASSERT_LE(bounds[i], bounds[i + 1]) << "part " << i;
    ASSERT_LE(bounds[i + 1], count);
    for (size_t x = bounds[i]; x < bounds[i + 1]; ++x) ++hits[x];
    size_t size = bounds[i + 1] - bounds[i];
    lo = std::min(lo, size);
    hi = std::max(hi, size);
  }
  for (size_t x = 0; x < count; ++x) ASSERT_EQ(hits[x], 1) << "element " << x;
  EXPECT_LE(hi - lo, 1u) << "count " << count << " parts " << parts;
  EXPECT_EQ(lo, count / parts);
}

TEST(RingPatternTest, BalancedSplitCoversExactly) {
  for (size_t count : kCounts) {
    for (int parts = 1; parts <= 9; ++parts) {
      SCOPED_TRACE(::testing::Message() << "count " << count << " parts " << parts);
      ExpectPartition(BalancedSplit(count, parts), count, parts);
    }
  }
  // Ring-sized splits, including counts smaller than the number of parts.
  for (int parts = 1; parts <= kMaxRanks; ++parts) {
    for (size_t count : {size_t{0}, size_t{1}, size_t{3}, size_t{63}, size_t{64}, size_t{65}}) {
      SCOPED_TRACE(::testing::Message() << "count " << count << " parts " << parts);
      ExpectPartition(BalancedSplit(count, parts), count, parts);
    }
  }
}

TEST(RingPatternTest, BalancedSplitDoesNotOverflow) {
  const size_t huge = SIZE_MAX / 3;
  std::vector<size_t> b = BalancedSplit(huge, 7);
  ASSERT_EQ(b.size(), 8u);
  EXPECT_EQ(b.back(), huge);
  for (int i = 0; i < 7; ++i) {
    size_t size = b[i + 1] - b[i];
    EXPECT_TRUE(size == huge / 7 || size == huge / 7 + 1) << i;
  }
}

TEST(RingPatternTest, EqualBlocksAreExact) {
  for (size_t block : kCounts) {
    for (int parts = 1; parts <= 9; ++parts) {
      std::vector<size_t> b = EqualBlocks(block, parts);
      ASSERT_EQ(b.size(), static_cast<size_t>(parts + 1));
      for (int i = 0; i < parts; ++i) {
        EXPECT_EQ(b[i], block * i);
        EXPECT_EQ(b[i + 1] - b[i], block);
      }
      if (block <= 1023) {
        SCOPED_TRACE(::testing::Message() << "block " << block << " parts " << parts);
        ExpectPartition(b, block * parts, parts);
      }
    }
  }
}

TEST(RingPatternTest, SegmentRangeCoversExactly) {
  for (size_t len : kCounts) {
    for (size_t segments = 1; segments <= 9; ++segments) {
      SCOPED_TRACE(::testing::Message() << "len " << len << " segments " << segments);
      std::vector<size_t> bounds{0};
      for (size_t s = 0; s < segments; ++s) {
        size_t b = 0, e = 0;
        SegmentRange(len, segments, s, &b, &e);
        ASSERT_EQ(b, bounds.back()) << "gap or overlap before segment " << s;
        bounds.push_back(e);
      }
      ExpectPartition(bounds, len, static_cast<int>(segments));
      // Segments of a range agree with the balanced split of the same range.
      EXPECT_EQ(bounds, BalancedSplit(len, static_cast<int>(segments)));
    }
  }
  // Large lengths do not overflow the intermediate product.
  const size_t huge = (size_t{1} << 62) + 5;
  size_t b = 0, e = 0;
  SegmentRange(huge, 1000, 999, &b, &e);
  EXPECT_EQ(e, huge);
  EXPECT_GE(e - b, huge / 1000);
  EXPECT_LE(e - b, huge / 1000 + 1);
}

TEST(TreeTest, ShapeIsConsistent) {
  for (int n = 1; n <= kMaxRanks; ++n) {
    SCOPED_TRACE(::testing::Message() << "n=" << n);
    EXPECT_EQ(TreeParent(0), -1);
    std::vector<int> child_of(n, -1);  // the parent whose children list names a rank
    for (int r = 0; r < n; ++r) {
      std::vector<int> children = TreeChildren(r, n);
      ASSERT_LE(children.size(), 2u);
      int subtree = 1;
      for (int c : children) {
        ASSERT_GT(c, 0);
        ASSERT_LT(c, n);
        EXPECT_EQ(TreeParent(c), r);
        EXPECT_EQ(child_of[c], -1) << "rank " << c << " has two parents";
        child_of[c] = r;
        subtree += TreeSubtreeSize(c, n);
      }
      EXPECT_EQ(TreeSubtreeSize(r, n), subtree) << "rank " << r;
      if (r > 0) {
        EXPECT_GE(TreeParent(r), 0);
        EXPECT_LT(TreeParent(r), r);
      }
    }
    for (int r = 1; r < n; ++r) EXPECT_EQ(child_of[r], TreeParent(r)) << "rank " << r;
    EXPECT_EQ(TreeSubtreeSize(0, n), n);
    int root_children_total = 0;
    for (int c : TreeChildren(0, n)) root_children_total += TreeSubtreeSize(c, n);
    EXPECT_EQ(root_children_total + 1, n);
    EXPECT_EQ(TreeSubtreeSize(n, n), 0);

    // Every rank is reached from 0 exactly once.
    std::vector<int> visits(n, 0);
    std::queue<int> frontier;
    frontier.push(0);
    int depth_limit = 0;
    while ((1 << depth_limit) <= n) ++depth_limit;
    std::vector<int> depth(n, 0);
    while (!frontier.empty()) {
      int r = frontier.front();
      frontier.pop();
      ++visits[r];
      EXPECT_LT(depth[r], depth_limit) << "rank " << r;
      for (int c : TreeChildren(r, n)) {
        depth[c] = depth[r] + 1;
        frontier.push(c);
      }
    }
    for (int r = 0; r < n; ++r) EXPECT_EQ(visits[r], 1) << "rank " << r;
  }
}

}  // namespace
}  // namespace sieve::algo
