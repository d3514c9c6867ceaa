// Kept and dropped runs found a 64-bit word at a time (the bitmap, not per element).
#include "subnet/masked_plan.h"

#include <algorithm>
#include <cstring>

namespace sieve::subnet {
namespace {

// The first element at or after `j` (below `end`) whose bit equals `want`; `end` if none.
size_t NextWith(const std::vector<uint64_t>& bits, size_t j, size_t end, bool want) {
  while (j < end) {
    uint64_t w = bits[j / 64] >> (j % 64);
    if (!want) w = ~w;
    const size_t left = 64 - j % 64;  // bits of this word from j on
    if (left < 64) w &= (uint64_t{1} << left) - 1;
    if (w != 0) return std::min(end, j + static_cast<size_t>(__builtin_ctzll(w)));
    j += left;
  }
  return end;
}

// Calls fn(begin, end) for each run of elements in [r.offset, r.offset + r.length) whose
// bit equals `kept`.
template <typename Fn>
void ForEachRun(const std::vector<uint64_t>& bits, const Range& r, bool kept, Fn fn) {
  const size_t end = r.offset + r.length;
  for (size_t j = NextWith(bits, r.offset, end, kept); j < end;) {
    const size_t stop = NextWith(bits, j, end, !kept);
    fn(j, stop);
    j = NextWith(bits, stop, end, kept);
  }
}

}  // namespace

Plan MaskPlan(const Plan& plan, const std::vector<uint64_t>& bits) {
  Plan out;
  for (const GroupPlan& g : plan.groups) {
    GroupPlan cut;
    cut.senders = g.senders;
    cut.receivers = g.receivers;
    for (const Range& r : g.ranges)
      ForEachRun(bits, r, true, [&](size_t begin, size_t end) {
        cut.ranges.push_back({begin, end - begin});
        cut.elems += end - begin;
      });
    if (cut.elems > 0) out.groups.push_back(std::move(cut));
  }
  return out;
}

void ZeroDropped(const Plan& plan, const std::vector<uint64_t>& bits, int rank, size_t elem_size,
                 void* recv) {
  char* base = static_cast<char*>(recv);
  for (const GroupPlan& g : plan.groups) {
    if (!g.Involves(rank)) continue;
    for (const Range& r : g.ranges)
      ForEachRun(bits, r, false, [&](size_t begin, size_t end) {
        std::memset(base + begin * elem_size, 0, (end - begin) * elem_size);
      });
  }
}

}  // namespace sieve::subnet
