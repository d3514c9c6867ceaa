// TernaryCodec: the ring/tree chunk codec of the ternary all-reduce and of its
// generalisation to L levels (DESIGN.md 1.3a; src.levels, 1 = ternary). Work holds
// exact integer partial sums; a wire image of k contributions is those sums
// packed in TernaryBits(k * L) bits (kernels/ternary.h gives the bit layout).
#ifndef SIEVE_ALGO_TERNARY_CODEC_H_
#define SIEVE_ALGO_TERNARY_CODEC_H_

#include <cstdint>

#include "algo/codec.h"
#include "kernels/ternary.h"

namespace sieve::algo {

// Scales still being agreed while the ring runs (ternary/ternary_scales.h):
// the codec asks for a range's before it first reads them.
class ScaleSource {
 public:
  virtual ~ScaleSource() = default;
  // Returns once src.scales holds the agreed scales of the blocks of
  // [offset, offset+elems) (or status() failed: the collective then fails).
  virtual void Ensure(size_t offset, size_t elems) = 0;
  virtual Status status() const = 0;
};

struct TernaryInput {
  // This rank's gradient, gathered through a mask when src.idx is set, with
  // error feedback when src.residual is set (kernels::TernarySource says how:
  // the pass that quantizes an element updates its residual; the ring and the
  // tree read each element of the input once, so it is updated once).
  kernels::TernarySource src;
  // When set: this rank's codes, already quantized (on a device, with the same
  // rng, scales and levels), as the wire image of every element in
  // TernaryBits(src.levels) bits; read instead of quantizing src.data (then unused).
  const void* quantized = nullptr;
  // When set, src.scales fills in as the call runs; null: agreed already.
  ScaleSource* pending_scales = nullptr;
};

// Where Deliver writes the dequantized result s_b * Q / divisor.
struct TernaryOutput {
  // The caller's buffer (dtype of the input); null: nothing is delivered, the
  // caller reads the final sums from work afterwards (a device dequantizes).
  void* data = nullptr;
  int divisor = 1;       // L for a sum, nL for an average
  // Under a mask: the result is scattered to the kept positions of a buffer of
  // `count` elements and every masked-out position is zeroed (bits, idx: the
  // mask, nnz > 0 kept elements). Dense when bits is null.
  const uint64_t* bits = nullptr;
  const uint32_t* idx = nullptr;
  size_t nnz = 0;
  size_t count = 0;
  // kStreaming for a result larger than the cache (SIEVE_STREAM_BYTES).
  kernels::OutputStores stores = kernels::OutputStores::kCached;
};

// The stores for a result of `bytes` on this rank: streaming from stream_bytes on
// (SIEVE_STREAM_BYTES; 0: never).
inline kernels::OutputStores OutputStoresFor(size_t bytes, size_t stream_bytes) {
  return stream_bytes > 0 && bytes >= stream_bytes ? kernels::OutputStores::kStreaming
                                                   : kernels::OutputStores::kCached;
}

class TernaryCodec : public Codec {
 public:
  // work: one element of kernels::TernaryWorkFor(nranks, input.src.levels) per
  // quantized element.
  TernaryCodec(const TernaryInput& input, const TernaryOutput& output, void* work, int nranks);

  size_t WireBytes(size_t elems, int contributions) const override;
  bool EncodeUsesScratch() const override { return true; }
  // contributions == 1: quantizes the input straight into the wire.
  const void* Encode(size_t offset, size_t elems, int contributions, void* scratch) override;
  // first: work = q(input) + wire (quantized on the fly); else work += wire.
  void ReduceInto(size_t offset, size_t elems, int contributions, const void* wire,
                  bool first) override;
  void LoadInput(size_t offset, size_t elems) override;
  void Finalize(size_t, size_t) override {}
  void* DirectTarget(size_t, size_t) override { return nullptr; }
  // work = the final sums; with an output, dequantized into it in the same
  // pass, a few thousand elements at a time while they are in cache (so the
  // Deliver that follows for this range has nothing left to do).
  void Decode(size_t offset, size_t elems, const void* wire) override;
  // Dequantize (fused with the mask's unpack and zero-fill, and the average's
  // division) of the final sums of the range into the output.
  void Deliver(size_t offset, size_t elems) override;
  // The sums' packed image is a function of the sums alone.
  bool ForwardsFinalImage() const override { return true; }
  // With an output: unpacked a few thousand elements at a time into a buffer
  // that stays in L1 and dequantized from there, so work (cold: one byte or
  // more per element of the whole call) is never written for the range.
  void DecodeAndDeliver(size_t offset, size_t elems, const void* wire) override;
  // The one-shot: the sums are exact integers, so any order gives the same bits.
  bool OneShot() const override { return true; }
  void CopyInputWire(size_t offset, size_t elems, void* scratch) override {
    Encode(offset, elems, 1, scratch);
  }
  void LoadWire(size_t offset, size_t elems, const void* wire) override;
  // With an output: the n images summed and dequantized into it in one pass
  // (kernels::TernaryGatherDecode; under a mask, a few thousand elements at a
  // time through work, scattered while in cache). Without one the sums must
  // stay in work, so the one-shot keeps its sequence.
  bool DecodesWires() const override { return out_.data != nullptr; }
  void DecodeWires(size_t offset, size_t elems, const void* const* wires, int n) override;

  Status status() const override {
    return in_.pending_scales != nullptr ? in_.pending_scales->status() : Status::OK();
  }

  kernels::TernaryWork work_type() const { return wt_; }

 private:
  char* Work(size_t offset) const { return work_ + offset * static_cast<size_t>(wt_); }
  // Bits of a partial sum of k contributions: values in [-kL, kL].
  int Bits(int contributions) const {
    return kernels::TernaryBits(contributions * in_.src.levels);
  }
  void EnsureScales(size_t offset, size_t elems) {
    if (in_.pending_scales != nullptr) in_.pending_scales->Ensure(offset, elems);
  }
  // work = this rank's codes for the range (quantized beforehand).
  void LoadCodes(size_t offset, size_t elems);
  // The dequantization of Deliver: of the sums in work, or in `sums` (the
  // range's, from its first element).
  void Dequantize(size_t offset, size_t elems) { DequantizeFrom(Work(offset), offset, elems); }
  void DequantizeFrom(const char* sums, size_t offset, size_t elems);
  // Decode with an output, a few thousand elements at a time: the sums
  // unpacked into work (keep_sums) or into an L1 buffer, then dequantized.
  void UnpackAndDequantize(size_t offset, size_t elems, const void* wire, bool keep_sums);

  TernaryInput in_;
  TernaryOutput out_;
  char* work_;
  int nranks_;
  kernels::TernaryWork wt_;
  // The range Decode already delivered, until its Deliver.
  size_t decoded_offset_ = 0, decoded_elems_ = 0;
  bool decoded_ = false;
};

}  // namespace sieve::algo

#endif  // SIEVE_ALGO_TERNARY_CODEC_H_
