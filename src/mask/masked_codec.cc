// MaskedCodec: packing, gathering and unpacking through kernels/masked_pack.h;
// partial and final images travel from the packed work buffer without a copy.
#include "mask/masked_codec.h"

#include <cstring>

#include "kernels/masked_pack.h"
#include "kernels/reduce.h"

namespace sieve::mask {

MaskedCodec::MaskedCodec(const void* input, void* output, void* packed_work, const View& mask,
                         kernels::DType dtype, kernels::RedOp op, int nranks)
    : input_(input),
      output_(output),
      work_(static_cast<char*>(packed_work)),
      mask_(mask),
      idx_(mask.idx),
      dtype_(dtype),
      op_(op),
      nranks_(nranks),
      elem_size_(kernels::DTypeSize(dtype)) {}

size_t MaskedCodec::WireBytes(size_t elems, int) const { return elems * elem_size_; }

const void* MaskedCodec::Encode(size_t offset, size_t elems, int contributions, void* scratch) {
  if (contributions > 1) return Work(offset);
  kernels::MaskedPack(elem_size_, input_, idx_ + offset, elems, scratch);
  return scratch;
}

void MaskedCodec::ReduceInto(size_t offset, size_t elems, int, const void* wire, bool first) {
  if (first) {
    kernels::MaskedGatherReduce(dtype_, op_, input_, idx_ + offset, wire, Work(offset), elems);
  } else {
    kernels::Reduce(dtype_, op_, Work(offset), wire, Work(offset), elems);
  }
}

void MaskedCodec::LoadInput(size_t offset, size_t elems) {
  kernels::MaskedPack(elem_size_, input_, idx_ + offset, elems, Work(offset));
}

void MaskedCodec::Finalize(size_t offset, size_t elems) {
  if (op_ == kernels::RedOp::kAvg && nranks_ > 1)
    kernels::DivideBy(dtype_, Work(offset), elems, nranks_);
}

void MaskedCodec::Decode(size_t offset, size_t elems, const void* wire) {
  if (wire != Work(offset)) std::memcpy(Work(offset), wire, elems * elem_size_);
}

void MaskedCodec::Deliver(size_t offset, size_t elems) {
  size_t begin, end;
  kernels::MaskedDenseRange(mask_.idx, mask_.nnz, mask_.count, offset, offset + elems, &begin,
                            &end);
  kernels::MaskedUnpackRange(elem_size_, Work(offset), mask_.bits, begin, end, output_);
}

}  // namespace sieve::mask
