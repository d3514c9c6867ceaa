// SubnetCodec: the group's ranges through GroupRanges; zero-copy whenever a piece of
// the ring lies in one range (every piece but those straddling a boundary).
#include "subnet/subnet_codec.h"

#include <cstdint>
#include <cstring>

#include "kernels/coverage_average.h"
#include "kernels/reduce.h"

namespace sieve::subnet {

SubnetCodec::SubnetCodec(const void* input, void* work, kernels::DType dtype,
                         const GroupRanges& ranges, int divisor)
    : input_(static_cast<const char*>(input)),
      work_(static_cast<char*>(work)),
      dtype_(dtype),
      elem_size_(kernels::DTypeSize(dtype)),
      ranges_(ranges),
      divisor_(divisor) {}

size_t SubnetCodec::WireBytes(size_t elems, int) const { return elems * elem_size_; }

bool SubnetCodec::EncodeNeedsScratch(size_t offset, size_t elems, int) const {
  return elems > 0 && ranges_.Contiguous(offset, elems) == SIZE_MAX;
}

const void* SubnetCodec::Encode(size_t offset, size_t elems, int contributions, void* scratch) {
  const char* src = contributions == 1 ? input_ : work_;
  const size_t at = ranges_.Contiguous(offset, elems);
  if (at != SIZE_MAX || elems == 0) return src + (at == SIZE_MAX ? 0 : at * elem_size_);
  char* out = static_cast<char*>(scratch);
  ranges_.ForEachPiece(offset, elems, [&](size_t buf, size_t n, size_t pos) {
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
  ranges_.ForEachPiece(offset, elems, [&](size_t buf, size_t n, size_t pos) {
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
  ranges_.ForEachPiece(offset, elems, [&](size_t buf, size_t n, size_t) {
    std::memcpy(work_ + buf * elem_size_, input_ + buf * elem_size_, n * elem_size_);
  });
}

void SubnetCodec::Finalize(size_t offset, size_t elems) {
  if (divisor_ > 1 && !(offset == divided_offset_ && elems == divided_elems_)) {
    ranges_.ForEachPiece(offset, elems, [&](size_t buf, size_t n, size_t) {
      kernels::DivideBy(dtype_, work_ + buf * elem_size_, n, divisor_);
    });
  }
  finalized_ += elems;
}

void* SubnetCodec::DirectTarget(size_t offset, size_t elems) {
  const size_t at = ranges_.Contiguous(offset, elems);
  return at == SIZE_MAX ? nullptr : work_ + at * elem_size_;
}

void SubnetCodec::Decode(size_t offset, size_t elems, const void* wire) {
  const char* w = static_cast<const char*>(wire);
  ranges_.ForEachPiece(offset, elems, [&](size_t buf, size_t n, size_t pos) {
    if (w + pos * elem_size_ != work_ + buf * elem_size_)
      std::memcpy(work_ + buf * elem_size_, w + pos * elem_size_, n * elem_size_);
  });
}

}  // namespace sieve::subnet
