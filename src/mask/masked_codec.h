// MaskedCodec: the codec of the masked all-reduce. Work is the packed vector of
// the nnz kept elements; offsets are packed positions. The first hop gathers
// straight from the caller's input by index (pack fused with the send), and the
// first combine gathers the input while adding the received image.
#ifndef SIEVE_MASK_MASKED_CODEC_H_
#define SIEVE_MASK_MASKED_CODEC_H_

#include <cstdint>

#include "algo/codec.h"
#include "kernels/dtype.h"

namespace sieve::mask {

class MaskedCodec : public algo::Codec {
 public:
  // input: the caller's full buffer; work: nnz packed elements; idx: kept indices.
  MaskedCodec(const void* input, void* packed_work, const uint32_t* idx, kernels::DType dtype,
              kernels::RedOp op, int nranks);

  size_t WireBytes(size_t elems, int contributions) const override;
  bool EncodeUsesScratch() const override { return true; }
  const void* Encode(size_t offset, size_t elems, int contributions, void* scratch) override;
  void ReduceInto(size_t offset, size_t elems, int contributions, const void* wire,
                  bool first) override;
  void LoadInput(size_t offset, size_t elems) override;
  void Finalize(size_t offset, size_t elems) override;
  void* DirectTarget(size_t offset, size_t elems) override { return Work(offset); }
  void Decode(size_t offset, size_t elems, const void* wire) override;

 private:
  char* Work(size_t offset) const { return work_ + offset * elem_size_; }

  const void* input_;
  char* work_;
  const uint32_t* idx_;
  kernels::DType dtype_;
  kernels::RedOp op_;
  int nranks_;
  size_t elem_size_;
};

}  // namespace sieve::mask

#endif  // SIEVE_MASK_MASKED_CODEC_H_
