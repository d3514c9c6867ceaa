// SubnetCodec: range lookup by binary search; zero-copy whenever a piece of
// the ring lies in one range (every piece but those straddling a boundary).
#include "subnet/subnet_codec.h"

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "kernels/coverage_average.h"
#include "kernels/reduce.h"

namespace sieve::subnet {

SubnetCodec::SubnetCodec(const void* input, void* work, kernels::DType dtype,
                         const std::vector<Range>& ranges, int divisor)
    : input_(static_cast<const char*>(input)),
      work_(static_cast<char*>(work)),
      dtype_(dtype),
      elem_size_(kernels::DTypeSize(dtype)),
      ranges_(ranges),
      divisor_(divisor) {
  size_t start = 0;
  for (const Range& r : ranges_) {
    starts_.push_back(start);
    start += r.length;
  }
}

template <typename Fn>
void SubnetCodec::ForEachPiece(size_t offset, size_t elems, Fn fn) const {
  if (elems == 0) return;
  // The range holding index `offset`: the last one starting at or before it.
  size_t i = static_cast<size_t>(std::upper_bound(starts_.begin(), starts_.end(), offset) -
                                 starts_.begin()) -
             1;
  size_t wire_pos = 0;
  while (elems > 0) {
    const size_t within = offset - starts_[i];
    const size_t n = std::min(elems, ranges_[i].length - within);
    fn(ranges_[i].offset + within, n, wire_pos);
    offset += n;
    elems -= n;
    wire_pos += n;
    ++i;
  }
}

size_t SubnetCodec::Contiguous(size_t offset, size_t elems) const {
  size_t first = SIZE_MAX;
  size_t pieces = 0;
  ForEachPiece(offset, elems, [&](size_t buf, size_t, size_t) {
    if (pieces++ == 0) first = buf;
  });
  return pieces == 1 ? first : SIZE_MAX;
}

size_t SubnetCodec::WireBytes(size_t elems, int) const { return elems * elem_size_; }

bool SubnetCodec::EncodeNeedsScratch(size_t offset, size_t elems, int) const {
  return elems > 0 && Contiguous(offset, elems) == SIZE_MAX;
}

const void* SubnetCodec::Encode(size_t offset, size_t elems, int contributions, void* scratch) {
  const char* src = contributions == 1 ? input_ : work_;
  const size_t at = Contiguous(offset, elems);
  if (at != SIZE_MAX || elems == 0) return src + (at == SIZE_MAX ? 0 : at * elem_size_);
  char* out = static_cast<char*>(scratch);
  ForEachPiece(offset, elems, [&](size_t buf, size_t n, size_t pos) {
    std::memcpy(out + pos * elem_size_, src + buf * elem_size_, n * elem_size_);
  });
  return out;
}

void SubnetCodec::ReduceInto(size_t offset, size_t elems, int contributions, const void* wire,
                             bool first) {
  const char* w = static_cast<const char*>(wire);
  const bool complete = first && contributions + 1 == divisor_;
  if (complete) {
    divided_offset_ = offset;
    divided_elems_ = elems;
  }
  ForEachPiece(offset, elems, [&](size_t buf, size_t n, size_t pos) {
    const char* acc = first ? input_ + buf * elem_size_ : work_ + buf * elem_size_;
    char* out = work_ + buf * elem_size_;
    if (complete)
      kernels::SumDivide(dtype_, acc, w + pos * elem_size_, out, n, divisor_);
    else
      kernels::Reduce(dtype_, kernels::RedOp::kSum, acc, w + pos * elem_size_, out, n);
  });
}

void SubnetCodec::LoadInput(size_t offset, size_t elems) {
  if (input_ == work_) return;
  ForEachPiece(offset, elems, [&](size_t buf, size_t n, size_t) {
    std::memcpy(work_ + buf * elem_size_, input_ + buf * elem_size_, n * elem_size_);
  });
}

std::vector<std::pair<char*, size_t>> SubnetCodec::WorkPieces(size_t offset, size_t elems) const {
  std::vector<std::pair<char*, size_t>> out;
  ForEachPiece(offset, elems, [&](size_t buf, size_t n, size_t) {
    out.emplace_back(work_ + buf * elem_size_, n * elem_size_);
  });
  return out;
}

void SubnetCodec::Finalize(size_t offset, size_t elems) {
  if (divisor_ > 1 && !(offset == divided_offset_ && elems == divided_elems_)) {
    ForEachPiece(offset, elems, [&](size_t buf, size_t n, size_t) {
      kernels::DivideBy(dtype_, work_ + buf * elem_size_, n, divisor_);
    });
  }
  finalized_ += elems;
}

void* SubnetCodec::DirectTarget(size_t offset, size_t elems) {
  const size_t at = Contiguous(offset, elems);
  return at == SIZE_MAX ? nullptr : work_ + at * elem_size_;
}

void SubnetCodec::Decode(size_t offset, size_t elems, const void* wire) {
  const char* w = static_cast<const char*>(wire);
  ForEachPiece(offset, elems, [&](size_t buf, size_t n, size_t pos) {
    if (w + pos * elem_size_ != work_ + buf * elem_size_)
      std::memcpy(work_ + buf * elem_size_, w + pos * elem_size_, n * elem_size_);
  });
}

}  // namespace sieve::subnet
