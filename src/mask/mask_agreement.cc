// Verdicts of the mask agreement messages (see mask_agreement.h).
#include "mask/mask_agreement.h"

namespace sieve::mask {

namespace {

// "2, 5": the ranks whose entry `field` differs from rank 0's.
std::string DifferingRanks(const uint64_t* all, int n, int field) {
  std::string out;
  for (int r = 1; r < n; ++r) {
    if (all[2 * static_cast<size_t>(r) + field] == all[field]) continue;
    if (!out.empty()) out += ", ";
    out += std::to_string(r);
  }
  return out;
}

}  // namespace

MaskVerdict CompareMaskDigests(const uint64_t* all, int nranks) {
  MaskVerdict v;
  v.ranks = DifferingRanks(all, nranks, 0);
  if (!v.ranks.empty()) {
    v.kind = MaskVerdict::kCountDiffers;
    return v;
  }
  v.ranks = DifferingRanks(all, nranks, 1);
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
