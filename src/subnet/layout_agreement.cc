// Verdict of the layout registration message (see layout_agreement.h).
#include "subnet/layout_agreement.h"

namespace sieve::subnet {
namespace {

// "2, 5": the ranks whose `field` (of 4 per rank) differs from rank 0's, or (want_zero) is zero.
std::string RanksWhere(const uint64_t* all, int n, int field, bool want_zero) {
  std::string out;
  for (int r = 0; r < n; ++r) {
    uint64_t v = all[4 * static_cast<size_t>(r) + field];
    if (want_zero ? v != 0 : (r == 0 || v == all[field])) continue;
    if (!out.empty()) out += ", ";
    out += std::to_string(r);
  }
  return out;
}

}  // namespace

LayoutVerdict CompareLayoutDigests(const uint64_t* all, int nranks) {
  LayoutVerdict v;
  v.ranks = RanksWhere(all, nranks, 0, /*want_zero=*/true);
  if (!v.ranks.empty()) {
    v.kind = LayoutVerdict::kInvalid;
    return v;
  }
  v.ranks = RanksWhere(all, nranks, 1, false);
  if (!v.ranks.empty()) {
    v.kind = LayoutVerdict::kCountDiffers;
    return v;
  }
  v.ranks = RanksWhere(all, nranks, 2, false);
  if (v.ranks.empty()) v.ranks = RanksWhere(all, nranks, 3, false);
  v.kind = v.ranks.empty() ? LayoutVerdict::kSame : LayoutVerdict::kLayoutDiffers;
  return v;
}

}  // namespace sieve::subnet
