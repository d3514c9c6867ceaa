// Verdict of the layout registration message (see layout_agreement.h).
#include "subnet/layout_agreement.h"

#include "coll/rank_digests.h"

namespace sieve::subnet {

LayoutVerdict CompareLayoutDigests(const uint64_t* all, int nranks) {
  constexpr size_t kWidth = 4;  // {valid, count, number of segments, hash} per rank
  LayoutVerdict v;
  v.ranks = coll::RanksWithZero(all, nranks, kWidth, 0);
  if (!v.ranks.empty()) {
    v.kind = LayoutVerdict::kInvalid;
    return v;
  }
  v.ranks = coll::RanksDifferingFromRank0(all, nranks, kWidth, 1);
  if (!v.ranks.empty()) {
    v.kind = LayoutVerdict::kCountDiffers;
    return v;
  }
  v.ranks = coll::RanksDifferingFromRank0(all, nranks, kWidth, 2);
  if (v.ranks.empty()) v.ranks = coll::RanksDifferingFromRank0(all, nranks, kWidth, 3);
  v.kind = v.ranks.empty() ? LayoutVerdict::kSame : LayoutVerdict::kLayoutDiffers;
  return v;
}

}  // namespace sieve::subnet
