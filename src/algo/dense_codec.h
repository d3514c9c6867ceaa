// DenseCodec: elements travel as they are; combining is the reduction op.
#ifndef SIEVE_ALGO_DENSE_CODEC_H_
#define SIEVE_ALGO_DENSE_CODEC_H_

#include "algo/codec.h"
#include "kernels/dtype.h"

namespace sieve::algo {

class DenseCodec : public Codec {
 public:
  // input and work may be the same buffer (in place). kAvg divides by nranks in Finalize.
  DenseCodec(const void* input, void* work, kernels::DType dtype, kernels::RedOp op, int nranks);

  size_t WireBytes(size_t elems, int contributions) const override;
  bool EncodeUsesScratch() const override { return false; }
  const void* Encode(size_t offset, size_t elems, int contributions, void* scratch) override;
  void ReduceInto(size_t offset, size_t elems, int contributions, const void* wire,
                  bool first) override;
  size_t PieceElementBytes() const override { return elem_size_; }
  void LoadInput(size_t offset, size_t elems) override;
  void Finalize(size_t offset, size_t elems) override;
  void* DirectTarget(size_t offset, size_t elems) override;
  void Decode(size_t offset, size_t elems, const void* wire) override;
  bool OneShot() const override { return true; }
  void CopyInputWire(size_t offset, size_t elems, void* scratch) override;
  void LoadWire(size_t offset, size_t elems, const void* wire) override { Decode(offset, elems, wire); }

 private:
  const char* In(size_t offset) const { return input_ + offset * elem_size_; }
  char* Work(size_t offset) const { return work_ + offset * elem_size_; }

  const char* input_;
  char* work_;
  kernels::DType dtype_;
  kernels::RedOp op_;
  int nranks_;
  size_t elem_size_;
};

}  // namespace sieve::algo

#endif  // SIEVE_ALGO_DENSE_CODEC_H_
