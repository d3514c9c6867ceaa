// Subnet planning and the subnet codec on one process: grouping by (senders,
// receivers) in first-offset order with adjacent ranges merged, D2FT plans
// from touched tables, the layout helpers (mask matrix, equal subnets),
// validation messages, the layout hash, the plan cache bound, and the codec's
// gather/scatter over ranges with the fused coverage division.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "subnet/layout_registry.h"
#include "subnet/subnet_allreduce.h"
#include "subnet/subnet_codec.h"

namespace sieve::subnet {
namespace {

TEST(GroupSegmentsTest, GroupsInFirstOffsetOrderWithAdjacentRangesMerged) {
  // Segments: [0,2) {0,1}, [2,5) {0,1}, [5,6) {2}, [6,9) nobody, [9,10) {0,1}.
  std::vector<size_t> offsets = {0, 2, 5, 6, 9, 10};
  std::vector<SegmentRole> roles = {{{0, 1}, {}}, {{0, 1}, {}}, {{2}, {}}, {{}, {}}, {{0, 1}, {}}};
  Plan plan = GroupSegments(offsets, roles);
  ASSERT_EQ(plan.groups.size(), 2u);
  EXPECT_EQ(plan.groups[0].senders, (std::vector<int>{0, 1}));
  ASSERT_EQ(plan.groups[0].ranges.size(), 2u);
  EXPECT_EQ(plan.groups[0].ranges[0].offset, 0u);
  EXPECT_EQ(plan.groups[0].ranges[0].length, 5u);
  EXPECT_EQ(plan.groups[0].ranges[1].offset, 9u);
  EXPECT_EQ(plan.groups[0].elems, 6u);
  EXPECT_EQ(plan.groups[1].senders, (std::vector<int>{2}));
  EXPECT_EQ(plan.groups[1].elems, 1u);
}

LayoutState MakeLayout(const std::vector<SegmentSpec>& specs, size_t count) {
  LayoutState layout;
  layout.count = count;
  for (const SegmentSpec& s : specs) {
    layout.offsets.push_back(s.offset);
    layout.holders.push_back(s.holders);
  }
  layout.offsets.push_back(count);
  return layout;
}

TEST(D2ftPlanTest, ContributorsSendHoldersReceiveUntouchedLeftOut) {
  // 3 ranks, 3 segments: held by {0,1,2}, {0,1}, {2}.
  LayoutState layout = MakeLayout({{0, 4, {0, 1, 2}}, {4, 4, {0, 1}}, {8, 2, {2}}}, 10);
  // Rank 0 touched segment 0; rank 1 segments 0 and 1; rank 2 nothing.
  std::vector<unsigned char> table = {0x1, 0x3, 0x0};
  Plan plan;
  ASSERT_TRUE(BuildD2ftPlan(layout, 3, table, &plan).ok());
  ASSERT_EQ(plan.groups.size(), 2u);
  EXPECT_EQ(plan.groups[0].senders, (std::vector<int>{0, 1}));
  EXPECT_EQ(plan.groups[0].receivers, (std::vector<int>{2}));
  EXPECT_EQ(plan.groups[0].elems, 4u);
  EXPECT_EQ(plan.groups[1].senders, (std::vector<int>{1}));
  EXPECT_EQ(plan.groups[1].receivers, (std::vector<int>{0}));
  // Rank 2 marks segment 1, which it does not hold.
  table[2] = 0x2;
  Status st = BuildD2ftPlan(layout, 3, table, &plan);
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("rank 2 marked segment 1"), std::string::npos) << st.message();
}

TEST(LayoutHelpersTest, MaskMatrixMergesRunsAndEqualSubnetsTakeTheRemainder) {
  // 2 ranks, count 10, blocks of 3: {0}, {0}, {0,1}, {1} (the last block has 1 element).
  const unsigned char matrix[] = {1, 1, 1, 0, /* rank 1 */ 0, 0, 1, 1};
  std::vector<SegmentSpec> segs;
  ASSERT_TRUE(SegmentsFromMaskMatrix(matrix, 2, 4, 3, 10, &segs).ok());
  ASSERT_EQ(segs.size(), 3u);
  EXPECT_EQ(segs[0].length, 6u);
  EXPECT_EQ(segs[1].holders, (std::vector<int>{0, 1}));
  EXPECT_EQ(segs[2].offset, 9u);
  EXPECT_EQ(segs[2].length, 1u);
  EXPECT_TRUE(ValidateSegments(10, segs, 2).ok());
  EXPECT_FALSE(SegmentsFromMaskMatrix(matrix, 2, 3, 3, 10, &segs).ok());
  ASSERT_TRUE(EqualSubnetSegments(10, 3, 2, &segs).ok());
  ASSERT_EQ(segs.size(), 3u);
  EXPECT_EQ(segs[2].offset, 6u);
  EXPECT_EQ(segs[2].length, 4u);
  EXPECT_EQ(segs[1].holders, (std::vector<int>{0, 1}));
  EXPECT_FALSE(EqualSubnetSegments(2, 3, 2, &segs).ok());
}

TEST(LayoutHelpersTest, ValidationNamesTheProblem) {
  auto message = [](std::vector<SegmentSpec> segs, size_t count) {
    return ValidateSegments(count, segs, 4).message();
  };
  EXPECT_NE(message({}, 0).find("at least one segment"), std::string::npos);
  EXPECT_NE(message({{0, 3, {0}}, {4, 2, {1}}}, 6).find("segment 1 starts at element 4"),
            std::string::npos);
  EXPECT_NE(message({{0, 3, {0}}}, 5).find("cover [0, 3)"), std::string::npos);
  EXPECT_NE(message({{0, 3, {2, 1}}}, 3).find("ascending"), std::string::npos);
  EXPECT_NE(message({{0, 3, {4}}}, 3).find("not a rank"), std::string::npos);
  EXPECT_NE(message({{0, 0, {0}}, {0, 3, {0}}}, 3).find("length 0"), std::string::npos);
  EXPECT_NE(message({{0, 3, {}}}, 3).find("0 holders"), std::string::npos);
}

TEST(LayoutHashTest, AnyChangeChangesTheHash) {
  std::vector<SegmentSpec> a = {{0, 3, {0, 1}}, {3, 2, {1}}};
  std::vector<SegmentSpec> b = a, c = a, d = a;
  b[1].holders = {0};
  c[0].length = 2, c[1].offset = 2, c[1].length = 3;
  EXPECT_EQ(LayoutHash(5, a), LayoutHash(5, d));
  EXPECT_NE(LayoutHash(5, a), LayoutHash(5, b));
  EXPECT_NE(LayoutHash(5, a), LayoutHash(5, c));
  EXPECT_NE(LayoutHash(5, a), LayoutHash(6, a));
}

TEST(PlanCacheTest, KeepsAtMostCapacityDroppingTheOldest) {
  PlanCache cache;
  for (size_t i = 0; i < PlanCache::kCapacity + 5; ++i)
    cache.Insert(std::to_string(i), std::make_shared<const Plan>());
  EXPECT_EQ(cache.size(), PlanCache::kCapacity);
  EXPECT_EQ(cache.Find("0"), nullptr);
  EXPECT_NE(cache.Find(std::to_string(PlanCache::kCapacity + 4)), nullptr);
}

TEST(SubnetCodecTest, GathersAcrossRangesDividesOnTheLastCombineTouchesNothingElse) {
  // Ranges [1,3) and [6,9) of a 10-element buffer: index space of 5 elements.
  std::vector<Range> list = {{1, 2}, {6, 3}};
  const GroupRanges ranges(list);
  EXPECT_EQ(ranges.Positions(), (std::vector<uint32_t>{1, 2, 6, 7, 8}));
  std::vector<float> input = {0, 1, 2, 0, 0, 0, 3, 4, 5, 0};
  std::vector<float> work(10, -7.0f);
  SubnetCodec codec(input.data(), work.data(), kernels::DType::kFloat32, ranges, 3);
  std::vector<float> scratch(5);
  // Within one range: zero copy; across the boundary: gathered.
  EXPECT_EQ(codec.Encode(2, 3, 1, scratch.data()), &input[6]);
  const float* gathered = static_cast<const float*>(codec.Encode(1, 3, 1, scratch.data()));
  EXPECT_EQ(gathered, scratch.data());
  EXPECT_EQ(std::vector<float>(gathered, gathered + 3), (std::vector<float>{2, 3, 4}));
  EXPECT_EQ(codec.DirectTarget(0, 2), &work[1]);
  EXPECT_EQ(codec.DirectTarget(1, 2), nullptr);
  // A combine carrying 2 contributions completes the sum of 3: divided in place.
  const float wire[] = {4, 5, 6, 8, 10};
  codec.ReduceInto(0, 5, 2, wire, /*first=*/true);
  EXPECT_EQ(work, (std::vector<float>{-7, 5.0f / 3, 7.0f / 3, -7, -7, -7, 3, 4, 5, -7}));
  // An intermediate combine only adds.
  std::vector<float> work2(10, -7.0f);
  SubnetCodec partial(input.data(), work2.data(), kernels::DType::kFloat32, ranges, 3);
  partial.ReduceInto(1, 2, 1, wire, true);
  EXPECT_EQ(work2, (std::vector<float>{-7, -7, 6, -7, -7, -7, 8, -7, -7, -7}));
  // Decode scatters the final image back.
  const float fin[] = {9, 8, 7, 6, 5};
  codec.Decode(0, 5, fin);
  EXPECT_EQ(work, (std::vector<float>{-7, 9, 8, -7, -7, -7, 7, 6, 5, -7}));
}

}  // namespace
}  // namespace sieve::subnet
