// GroupRanges: a group's element ranges of the buffer, concatenated into the
// index space its ring works in, and the way back from an index range to the
// contiguous pieces of the buffer behind it. Shared by the group's codecs
// (dense and quantized) and its fan-out to receivers.
#ifndef SIEVE_SUBNET_GROUP_RANGES_H_
#define SIEVE_SUBNET_GROUP_RANGES_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "subnet/subnet_plan.h"

namespace sieve::subnet {

class GroupRanges {
 public:
  // `ranges` must outlive this object.
  explicit GroupRanges(const std::vector<Range>& ranges);

  // Calls fn(buffer element, elements, position from `offset`) for each piece
  // of the index range [offset, offset + elems), in index order.
  template <typename Fn>
  void ForEachPiece(size_t offset, size_t elems, Fn fn) const {
    if (elems == 0) return;
    // The range holding index `offset`: the last one starting at or before it.
    size_t i = static_cast<size_t>(std::upper_bound(starts_.begin(), starts_.end(), offset) -
                                   starts_.begin()) -
               1;
    size_t pos = 0;
    while (elems > 0) {
      const size_t within = offset - starts_[i];
      const size_t n = std::min(elems, ranges_[i].length - within);
      fn(ranges_[i].offset + within, n, pos);
      offset += n;
      elems -= n;
      pos += n;
      ++i;
    }
  }

  // The buffer element of index `offset` when [offset, offset + elems) is one
  // contiguous piece, else SIZE_MAX.
  size_t Contiguous(size_t offset, size_t elems) const;
  // The pieces of `base` (elements of elem_size bytes) behind [offset, offset + elems):
  // (pointer, bytes) in index order.
  std::vector<std::pair<char*, size_t>> Pieces(char* base, size_t elem_size, size_t offset,
                                               size_t elems) const;
  // The buffer element of every index, in index order (a gather list).
  // REQUIRES: every element below 2^32.
  std::vector<uint32_t> Positions() const;

 private:
  const std::vector<Range>& ranges_;
  std::vector<size_t> starts_;  // index of each range's first element
  size_t elems_ = 0;
};

}  // namespace sieve::subnet

#endif  // SIEVE_SUBNET_GROUP_RANGES_H_
