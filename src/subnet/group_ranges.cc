// GroupRanges: range lookup by binary search over the ranges' first indices.
#include "subnet/group_ranges.h"

namespace sieve::subnet {

GroupRanges::GroupRanges(const std::vector<Range>& ranges) : ranges_(ranges) {
  for (const Range& r : ranges_) {
    starts_.push_back(elems_);
    elems_ += r.length;
  }
}

size_t GroupRanges::Contiguous(size_t offset, size_t elems) const {
  size_t first = SIZE_MAX;
  size_t pieces = 0;
  ForEachPiece(offset, elems, [&](size_t buf, size_t, size_t) {
    if (pieces++ == 0) first = buf;
  });
  return pieces == 1 ? first : SIZE_MAX;
}

std::vector<std::pair<char*, size_t>> GroupRanges::Pieces(char* base, size_t elem_size,
                                                          size_t offset, size_t elems) const {
  std::vector<std::pair<char*, size_t>> out;
  ForEachPiece(offset, elems, [&](size_t buf, size_t n, size_t) {
    out.emplace_back(base + buf * elem_size, n * elem_size);
  });
  return out;
}

std::vector<uint32_t> GroupRanges::Positions() const {
  std::vector<uint32_t> out;
  out.reserve(elems_);
  for (const Range& r : ranges_)
    for (size_t j = 0; j < r.length; ++j) out.push_back(static_cast<uint32_t>(r.offset + j));
  return out;
}

}  // namespace sieve::subnet
