// Verdicts of the mask agreement messages (see mask_agreement.h).
#include "mask/mask_agreement.h"

#include "coll/rank_digests.h"

namespace sieve::mask {

MaskVerdict CompareMaskDigests(const uint64_t* all, int nranks) {
  constexpr size_t kWidth = kMaskDigestWords;  // {count, policy, MaskHash} per rank
  MaskVerdict v;
  v.ranks = coll::RanksDifferingFromRank0(all, nranks, kWidth, 0);
  if (!v.ranks.empty()) {
    v.kind = MaskVerdict::kCountDiffers;
    return v;
  }
  v.ranks = coll::RanksDifferingFromRank0(all, nranks, kWidth, 1);
  if (!v.ranks.empty()) {
    v.kind = MaskVerdict::kPolicyDiffers;
    return v;
  }
  v.ranks = coll::RanksDifferingFromRank0(all, nranks, kWidth, 2);
  v.kind = v.ranks.empty() ? MaskVerdict::kSame : MaskVerdict::kMaskDiffers;
  return v;
}

TrackedStep DecideTrackedStep(const uint8_t flags[3]) {
  const bool masked = flags[0] != 0, learning = flags[1] != 0, unsettled = flags[2] != 0;
  if (masked && learning) return TrackedStep::kDisagree;
  if (masked) return unsettled ? TrackedStep::kStrayed : TrackedStep::kMasked;
  return unsettled ? TrackedStep::kLearning : TrackedStep::kStartMasking;
}

}  // namespace sieve::mask
