// Fuzzes the verdicts ranks draw from agreement messages, each checked against a direct reading:
// the tracker's three flag bytes, the all-gathered (count, policy, hash) words of mask
// registration and the (valid, count, segments, hash) words of subnet layout registration.
#include <string>
#include <vector>

#include "fuzz_check.h"
#include "mask/mask_agreement.h"
#include "subnet/layout_agreement.h"

using namespace sieve::mask;
using sieve::subnet::CompareLayoutDigests;
using sieve::subnet::LayoutVerdict;

namespace {

// Ranks r >= first where pred(r), as "2, 5".
template <typename Pred>
std::string List(int first, int n, Pred pred) {
  std::string out;
  for (int r = first; r < n; ++r)
    if (pred(r)) out += (out.empty() ? "" : ", ") + std::to_string(r);
  return out;
}

void CheckLayout(const std::vector<uint64_t>& words) {
  const int n = static_cast<int>(words.size() / 4);
  if (n < 1) return;
  LayoutVerdict v = CompareLayoutDigests(words.data(), n);
  auto w = [&](int r, int f) { return words[4 * static_cast<size_t>(r) + f]; };
  std::string invalid = List(0, n, [&](int r) { return w(r, 0) == 0; });
  std::string counts = List(1, n, [&](int r) { return w(r, 1) != w(0, 1); });
  std::string segs = List(1, n, [&](int r) { return w(r, 2) != w(0, 2); });
  std::string hashes = List(1, n, [&](int r) { return w(r, 3) != w(0, 3); });
  if (!invalid.empty()) {
    FUZZ_CHECK(v.kind == LayoutVerdict::kInvalid && v.ranks == invalid);
  } else if (!counts.empty()) {
    FUZZ_CHECK(v.kind == LayoutVerdict::kCountDiffers && v.ranks == counts);
  } else if (!segs.empty() || !hashes.empty()) {
    FUZZ_CHECK(v.kind == LayoutVerdict::kLayoutDiffers && v.ranks == (segs.empty() ? hashes : segs));
  } else {
    FUZZ_CHECK(v.kind == LayoutVerdict::kSame && v.ranks.empty());
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  sieve_fuzz::Reader in(data, size);
  const uint8_t flags[3] = {in.Take<uint8_t>(), in.Take<uint8_t>(), in.Take<uint8_t>()};
  TrackedStep step = DecideTrackedStep(flags);
  if (flags[0] && flags[1]) FUZZ_CHECK(step == TrackedStep::kDisagree);
  if (!flags[0]) FUZZ_CHECK(step == TrackedStep::kLearning || step == TrackedStep::kStartMasking);
  if (step == TrackedStep::kMasked) FUZZ_CHECK(flags[0] && !flags[1] && !flags[2]);

  int n = 1 + static_cast<int>(in.left() / 24);
  if (n > 256) n = 256;
  constexpr size_t kW = sieve::mask::kMaskDigestWords;
  std::vector<uint64_t> all(kW * static_cast<size_t>(n));
  for (auto& w : all) w = in.Take<uint64_t>();
  MaskVerdict v = CompareMaskDigests(all.data(), n);
  // Direct reading: which ranks' count, then policy, then hash, differ from rank 0's.
  std::string counts, policies, hashes;
  for (int r = 1; r < n; ++r) {
    if (all[kW * r] != all[0]) counts += (counts.empty() ? "" : ", ") + std::to_string(r);
    if (all[kW * r + 1] != all[1]) policies += (policies.empty() ? "" : ", ") + std::to_string(r);
    if (all[kW * r + 2] != all[2]) hashes += (hashes.empty() ? "" : ", ") + std::to_string(r);
  }
  if (!counts.empty()) {
    FUZZ_CHECK(v.kind == MaskVerdict::kCountDiffers && v.ranks == counts);
  } else if (!policies.empty()) {
    FUZZ_CHECK(v.kind == MaskVerdict::kPolicyDiffers && v.ranks == policies);
  } else if (!hashes.empty()) {
    FUZZ_CHECK(v.kind == MaskVerdict::kMaskDiffers && v.ranks == hashes);
  } else {
    FUZZ_CHECK(v.kind == MaskVerdict::kSame && v.ranks.empty());
  }
  // The same words read as layout registration messages (4 words per rank).
  all.resize(all.size() / 4 * 4);
  CheckLayout(all);
  return 0;
}
