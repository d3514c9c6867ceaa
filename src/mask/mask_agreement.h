// What ranks conclude from the small agreement messages of the mask code, as pure functions of
// the received bytes: the all-gathered (count, mask hash) pairs of registration and the three
// max-reduced flag bytes of the mask tracker. Pure so they can be fuzzed.
#ifndef SIEVE_MASK_MASK_AGREEMENT_H_
#define SIEVE_MASK_MASK_AGREEMENT_H_

#include <cstddef>
#include <cstdint>
#include <string>

namespace sieve::mask {

// Registration: every rank all-gathers {count, policy, MaskHash}; rank r's words are
// all[kMaskDigestWords * r + f].
constexpr size_t kMaskDigestWords = 3;
struct MaskVerdict {
  enum Kind { kSame, kCountDiffers, kPolicyDiffers, kMaskDiffers };
  Kind kind = kSame;
  std::string ranks;  // "2, 5": the ranks whose field differs from rank 0's (count, then policy)
};
// REQUIRES: all holds kMaskDigestWords * nranks words, nranks >= 1.
MaskVerdict CompareMaskDigests(const uint64_t* all, int nranks);

// Tracker: the max over ranks of {in masked state, in learning state, unstable or strayed}
// (any non-zero byte counts as set).
enum class TrackedStep {
  kDisagree,        // ranks disagree on the buffer's state: relearn, this step dense
  kMasked,          // every rank masked and none strayed: masked step
  kStrayed,         // masked, but a rank wrote outside the mask: dense step, relearn
  kLearning,        // dense step; some rank's pattern is not yet stable
  kStartMasking,    // dense step, then agree on the union mask and switch to masked state
};
TrackedStep DecideTrackedStep(const uint8_t flags[3]);

}  // namespace sieve::mask

#endif  // SIEVE_MASK_MASK_AGREEMENT_H_
