// MaskedCodec: the codec of the masked all-reduce. Work is the packed vector of
// the nnz kept elements; offsets are packed positions. The first hop gathers
// straight from the caller's input by index (pack fused with the send), and the
// first combine gathers the input while adding the received image, and each
// range is unpacked into the caller's buffer (zero-fill of the masked-out
// positions it owns included) as soon as it is final, while still in cache.
#ifndef SIEVE_MASK_MASKED_CODEC_H_
#define SIEVE_MASK_MASKED_CODEC_H_

#include <cstdint>

#include "algo/codec.h"
#include "kernels/dtype.h"

namespace sieve::mask {

class MaskedCodec : public algo::Codec {
 public:
  // The mask's nnz > 0 kept indices `idx` (increasing) and bitmap `bits` over `count`.
  struct View {
    const uint32_t* idx = nullptr;
    const uint64_t* bits = nullptr;
    size_t nnz = 0;
    size_t count = 0;
  };
  // input, output: the caller's full buffers (may be the same); work: nnz packed elements.
  MaskedCodec(const void* input, void* output, void* packed_work, const View& mask,
              kernels::DType dtype, kernels::RedOp op, int nranks);

  size_t WireBytes(size_t elems, int contributions) const override;
  bool EncodeUsesScratch() const override { return true; }
  const void* Encode(size_t offset, size_t elems, int contributions, void* scratch) override;
  void ReduceInto(size_t offset, size_t elems, int contributions, const void* wire,
                  bool first) override;
  void LoadInput(size_t offset, size_t elems) override;
  void Finalize(size_t offset, size_t elems) override;
  void* DirectTarget(size_t offset, size_t elems) override { return Work(offset); }
  void Decode(size_t offset, size_t elems, const void* wire) override;
  // Unpacks the range into output, with zero-fill of the dense positions it owns.
  void Deliver(size_t offset, size_t elems) override;
  // The one-shot: every rank's packed input, added in rank order.
  bool OneShot() const override { return true; }
  void CopyInputWire(size_t offset, size_t elems, void* scratch) override {
    Encode(offset, elems, 1, scratch);
  }
  void LoadWire(size_t offset, size_t elems, const void* wire) override {
    Decode(offset, elems, wire);
  }

 private:
  char* Work(size_t offset) const { return work_ + offset * elem_size_; }

  const void* input_;
  void* output_;
  char* work_;
  View mask_;
  const uint32_t* idx_;
  kernels::DType dtype_;
  kernels::RedOp op_;
  int nranks_;
  size_t elem_size_;
};

}  // namespace sieve::mask

#endif  // SIEVE_MASK_MASKED_CODEC_H_
