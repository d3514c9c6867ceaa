// TernaryValuesCodec: the one-shot of values of a ternary (or L-level) all-reduce
// (plan::Algo::kOneShotValues). Every rank sends its values as the quantizer sees
// them (float32: gathered through the mask, g + e_prev with error feedback;
// kernels::TernaryStage) to every other rank, and every rank then does what the
// scale round and the codes' one-shot would have done: each block's scale is the
// max over the n ranks' abs-maxes (carried in the images), each rank p's values are
// quantized with p's own Philox stream, and the n codes are added and delivered. The
// codes are a function of
// a rank's values, the scale and its stream only, so the result is the same bits as
// the codes' plan, in one one-way delay instead of two (no scale round), for 16x the
// bytes of ternary codes: where plan::ValuesOneShotPays. This rank's own values are
// quantized from its input, so its residual is updated in that pass.
//
// Image of a rank: its `elems` values (float32), then its rate proposal (a float, as
// the scale round carries it: plan/link_rate.h), then its ceil(elems / block) block
// abs-maxes (float32, what the scale round would send): with error feedback the scale
// is the gradient's (kernels/ternary.h), which the values g + e_prev do not tell, and
// each rank decides on feedback for itself, so every image carries them. Only the
// one-shot runs this codec, in one message per peer (a block's scale needs every
// value of it).
#ifndef SIEVE_TERNARY_VALUES_CODEC_H_
#define SIEVE_TERNARY_VALUES_CODEC_H_

#include <cstddef>
#include <vector>

#include "ternary/ternary_codec.h"

namespace sieve::algo {

class TernaryValuesCodec : public Codec {
 public:
  // `codes`: the call's codec, which adds codes and delivers; its input's source is
  // this rank's (mask, residual, stream), and its scales are `scales` (nblocks
  // floats, written here before they are read). `elems`: the call's element count.
  TernaryValuesCodec(TernaryCodec& codes, const kernels::TernarySource& src, size_t elems,
                     float* scales, int rank, int nranks, float proposal);

  size_t WireBytes(size_t elems, int) const override {
    return (elems + 1 + CarriedScales(elems)) * sizeof(float);
  }
  bool EncodeUsesScratch() const override { return true; }
  bool OneShot() const override { return true; }
  void CopyInputWire(size_t offset, size_t elems, void* scratch) override;
  bool DecodesWires() const override { return true; }
  // The scales from every image, every rank's codes, their sum delivered.
  void DecodeWires(size_t offset, size_t elems, const void* const* wires, int n) override;
  // One rank (nothing to exchange): this rank's abs-maxes are the scales.
  void LoadInput(size_t offset, size_t elems) override;
  void Finalize(size_t offset, size_t elems) override {}
  void Deliver(size_t offset, size_t elems) override;
  // The ring's, tree's and direct exchange's calls: not this codec's (status() fails).
  const void* Encode(size_t, size_t, int, void* scratch) override;
  void ReduceInto(size_t, size_t, int, const void*, bool) override { NotOneShot(); }
  void* DirectTarget(size_t, size_t) override { return nullptr; }
  void Decode(size_t, size_t, const void*) override { NotOneShot(); }

  Status status() const override { return status_.ok() ? codes_.status() : status_; }
  // Every rank's rate proposal, by rank, after DecodeWires.
  const std::vector<float>& proposals() const { return proposals_; }

 private:
  void NotOneShot();
  // The abs-maxes an image carries: one per block.
  size_t CarriedScales(size_t elems) const { return (elems + src_.block - 1) / src_.block; }
  // Whether [offset, offset+elems) is the whole call (one range); else status_ fails.
  bool WholeCall(size_t offset, size_t elems);

  TernaryCodec& codes_;
  kernels::TernarySource src_;  // this rank's input, as the codes' codec reads it
  size_t elems_;
  float* scales_;
  int rank_, nranks_;
  float proposal_;
  std::vector<float> proposals_;
  Status status_;
};

}  // namespace sieve::algo

#endif  // SIEVE_TERNARY_VALUES_CODEC_H_
