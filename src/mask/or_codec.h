// OrCodec: a codec over 64-bit words whose combination is bitwise OR, so the
// ring all-reduces a bitmap to the union of every rank's mask.
#ifndef SIEVE_MASK_OR_CODEC_H_
#define SIEVE_MASK_OR_CODEC_H_

#include <cstdint>

#include "algo/codec.h"

namespace sieve::mask {

class OrCodec : public algo::Codec {
 public:
  // In place: `words` is both this rank's input and the result.
  explicit OrCodec(uint64_t* words) : words_(words) {}

  size_t WireBytes(size_t elems, int) const override { return elems * sizeof(uint64_t); }
  bool EncodeUsesScratch() const override { return false; }
  const void* Encode(size_t offset, size_t, int, void*) override { return words_ + offset; }
  void ReduceInto(size_t offset, size_t elems, int, const void* wire, bool) override;
  void LoadInput(size_t, size_t) override {}
  void Finalize(size_t, size_t) override {}
  void* DirectTarget(size_t offset, size_t) override { return words_ + offset; }
  void Decode(size_t offset, size_t elems, const void* wire) override;

 private:
  uint64_t* words_;
};

}  // namespace sieve::mask

#endif  // SIEVE_MASK_OR_CODEC_H_
