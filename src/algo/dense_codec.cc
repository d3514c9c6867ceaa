// DenseCodec: zero-copy sends from input/work, reductions via kernels/.
#include "algo/dense_codec.h"

#include <cstring>

#include "kernels/reduce.h"

namespace sieve::algo {

DenseCodec::DenseCodec(const void* input, void* work, kernels::DType dtype, kernels::RedOp op,
                       int nranks)
    : input_(static_cast<const char*>(input)),
      work_(static_cast<char*>(work)),
      dtype_(dtype),
      op_(op),
      nranks_(nranks),
      elem_size_(kernels::DTypeSize(dtype)) {}

size_t DenseCodec::WireBytes(size_t elems, int) const { return elems * elem_size_; }

const void* DenseCodec::Encode(size_t offset, size_t, int contributions, void*) {
  return contributions == 1 ? static_cast<const void*>(In(offset)) : Work(offset);
}

void DenseCodec::ReduceInto(size_t offset, size_t elems, int, const void* wire, bool first) {
  const void* acc = first ? static_cast<const void*>(In(offset)) : Work(offset);
  kernels::Reduce(dtype_, op_, acc, wire, Work(offset), elems);
}

void DenseCodec::LoadInput(size_t offset, size_t elems) {
  // elems may be 0 with a NULL buffer (a count-0 call): memcpy must not see it.
  if (elems != 0 && In(offset) != Work(offset))
    std::memcpy(Work(offset), In(offset), elems * elem_size_);
}

void DenseCodec::Finalize(size_t offset, size_t elems) {
  if (op_ == kernels::RedOp::kAvg && nranks_ > 1)
    kernels::DivideBy(dtype_, Work(offset), elems, nranks_);
}

void* DenseCodec::DirectTarget(size_t offset, size_t) { return Work(offset); }

void DenseCodec::Decode(size_t offset, size_t elems, const void* wire) {
  if (wire != Work(offset)) std::memcpy(Work(offset), wire, elems * elem_size_);
}

void DenseCodec::CopyInputWire(size_t offset, size_t elems, void* scratch) {
  if (elems != 0) std::memcpy(scratch, In(offset), elems * elem_size_);
}

}  // namespace sieve::algo
