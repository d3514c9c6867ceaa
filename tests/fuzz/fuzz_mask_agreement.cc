// Fuzzes the verdicts ranks draw from mask agreement messages: the all-gathered (count, hash)
// pairs of registration, checked against a direct reading, and the tracker's three flag bytes.
#include <string>
#include <vector>

#include "fuzz_check.h"
#include "mask/mask_agreement.h"

using namespace sieve::mask;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  sieve_fuzz::Reader in(data, size);
  const uint8_t flags[3] = {in.Take<uint8_t>(), in.Take<uint8_t>(), in.Take<uint8_t>()};
  TrackedStep step = DecideTrackedStep(flags);
  if (flags[0] && flags[1]) FUZZ_CHECK(step == TrackedStep::kDisagree);
  if (!flags[0]) FUZZ_CHECK(step == TrackedStep::kLearning || step == TrackedStep::kStartMasking);
  if (step == TrackedStep::kMasked) FUZZ_CHECK(flags[0] && !flags[1] && !flags[2]);

  int n = 1 + static_cast<int>(in.left() / 16);
  if (n > 256) n = 256;
  std::vector<uint64_t> all(2 * static_cast<size_t>(n));
  for (auto& w : all) w = in.Take<uint64_t>();
  MaskVerdict v = CompareMaskDigests(all.data(), n);
  // Direct reading: which ranks' count, then hash, differ from rank 0's.
  std::string counts, hashes;
  for (int r = 1; r < n; ++r) {
    if (all[2 * r] != all[0]) counts += (counts.empty() ? "" : ", ") + std::to_string(r);
    if (all[2 * r + 1] != all[1]) hashes += (hashes.empty() ? "" : ", ") + std::to_string(r);
  }
  if (!counts.empty()) {
    FUZZ_CHECK(v.kind == MaskVerdict::kCountDiffers && v.ranks == counts);
  } else if (!hashes.empty()) {
    FUZZ_CHECK(v.kind == MaskVerdict::kMaskDiffers && v.ranks == hashes);
  } else {
    FUZZ_CHECK(v.kind == MaskVerdict::kSame && v.ranks.empty());
  }
  return 0;
}
