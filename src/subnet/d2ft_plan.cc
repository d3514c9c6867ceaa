// The D2FT plan of a gathered (or given) schedule table: the parser of the touched bitmaps
// every rank receives. Kept apart from the exchange so it is a pure function that is fuzzed.
#include <algorithm>

#include "subnet/subnet_allreduce.h"

namespace sieve::subnet {
namespace {

bool Bit(const unsigned char* row, size_t k) { return ((row[k / 8] >> (k % 8)) & 1u) != 0; }

}  // namespace

Status BuildD2ftPlan(const LayoutState& layout, int nranks, const std::vector<unsigned char>& table,
                     Plan* plan) {
  const size_t k_count = static_cast<size_t>(layout.num_segments());
  const size_t row_bytes = (k_count + 7) / 8;
  if (nranks < 1 || table.size() / row_bytes < static_cast<size_t>(nranks))
    return Status::InvalidArgument(StrFormat("a D2FT table of %zu bytes does not hold %d rows of %zu",
                                             table.size(), nranks, row_bytes));
  std::vector<SegmentRole> roles(k_count);
  for (size_t k = 0; k < k_count; ++k) {
    const std::vector<int>& holders = layout.holders[k];
    for (int r = 0; r < nranks; ++r) {
      if (!Bit(&table[static_cast<size_t>(r) * row_bytes], k)) continue;
      if (!std::binary_search(holders.begin(), holders.end(), r))
        return Status::InvalidArgument(StrFormat(
            "rank %d marked segment %zu as touched but does not hold it (only holders may "
            "contribute)",
            r, k));
      roles[k].senders.push_back(r);
    }
    if (roles[k].senders.empty()) continue;  // nobody touched it: nothing moves
    for (int r : holders)
      if (!std::binary_search(roles[k].senders.begin(), roles[k].senders.end(), r))
        roles[k].receivers.push_back(r);
  }
  *plan = GroupSegments(layout.offsets, roles);
  return Status::OK();
}

}  // namespace sieve::subnet
