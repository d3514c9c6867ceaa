// QuantizedGroupCodec: one group's ring at L levels (issue 20; DESIGN.md 1.3a on
// a subnet). The ternary codec (ternary/ternary_codec.h; one codec for every L)
// runs over the group's index space, gathering the group's elements through
// their buffer positions as it does through a mask: Philox index and scale
// blocks count positions within the group. The block scales are agreed among
// the group's senders on the ring's own channel (ternary/ternary_scales.h), the
// ring carries exact integer partial sums with bit growth, and each range's
// final sums are dequantized, piece by piece, into recvbuff as
// (s_b * Q) / (|T| * L): nothing outside the group's ranges is written.
// With error feedback the group's elements are sent as g + e and each one's
// residual becomes g + e - s * q / L (the kernels update it in the pass that
// quantizes the element): the group's residuals are gathered from the buffer's
// (indexed by buffer position) at the start and stored back after the ring.
#ifndef SIEVE_SUBNET_QUANTIZED_GROUP_CODEC_H_
#define SIEVE_SUBNET_QUANTIZED_GROUP_CODEC_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "algo/channel.h"
#include "algo/ring.h"
#include "kernels/ternary.h"
#include "subnet/quantized_fan.h"
#include "subnet/subnet_codec.h"
#include "ternary/ternary_codec.h"
#include "ternary/ternary_scales.h"

namespace sieve::subnet {

// The quantized call's parameters (sieveAllReduceSubnetQuantized): the same on every rank.
struct GroupQuantization {
  int levels = 0;  // 1..kernels::kMaxLevels; 0: the dense exchange
  uint64_t seed = 0;
  uint64_t step = 0;
  size_t block = 2048;
};

class QuantizedGroupCodec : public GroupCodec {
 public:
  // ring: the group's ring channel (its members are the senders, at least 2);
  // bounds: the ring's chunks, `chunk` this rank's; options: the ring's (its
  // pipelining segments decide the scale pieces); rank: this rank's Philox key
  // (its rank in the communicator); residual: null, or this rank's residual of
  // every buffer position (error feedback).
  QuantizedGroupCodec(algo::Channel& ring, const GroupRanges& ranges,
                      const std::vector<size_t>& bounds, int chunk,
                      const algo::RingOptions& options, const void* send, void* recv,
                      kernels::DType dtype, const GroupQuantization& q, int rank,
                      float* residual);

  // Posts the scale agreement (this rank's abs-maxes go out piece by piece)
  // before the ring's first message on the channel.
  Status Start() { return scales_->Start(src_); }
  // After the ring: every piece agreed and this rank's scale sends complete;
  // the updated residuals stored back.
  Status Finish();

  size_t finalized() const override { return finalized_; }
  size_t WireBytes(size_t elems, int contributions) const override {
    return codec_->WireBytes(elems, contributions);
  }
  bool EncodeUsesScratch() const override { return true; }
  const void* Encode(size_t offset, size_t elems, int contributions, void* scratch) override {
    return codec_->Encode(offset, elems, contributions, scratch);
  }
  void ReduceInto(size_t offset, size_t elems, int contributions, const void* wire,
                  bool first) override {
    codec_->ReduceInto(offset, elems, contributions, wire, first);
  }
  void LoadInput(size_t offset, size_t elems) override { codec_->LoadInput(offset, elems); }
  void Finalize(size_t offset, size_t elems) override { codec_->Finalize(offset, elems); }
  void* DirectTarget(size_t, size_t) override { return nullptr; }
  void Decode(size_t offset, size_t elems, const void* wire) override {
    codec_->Decode(offset, elems, wire);
  }
  // The range's final sums, dequantized into recvbuff's pieces of it.
  void Deliver(size_t offset, size_t elems) override;
  // The fan-out message of the final range [begin, begin + elems) (quantized_fan.h).
  void FanMessage(const FanFormat& f, size_t begin, size_t elems, void* msg) const {
    EncodeFan(f, begin, elems, scale_values_.data(),
              work_.data() + begin * static_cast<size_t>(wt_), msg);
  }
  Status status() const override { return codec_->status(); }

 private:
  const GroupRanges& ranges_;
  char* recv_;
  int divisor_;  // |T| * L
  size_t chunk_begin_, chunk_end_;
  std::vector<uint32_t> positions_;
  float* residual_;                     // the buffer's, or null
  std::vector<float> group_residual_;  // the group's elements' (src_.residual)
  std::vector<float> scale_values_;
  kernels::TernarySource src_;
  kernels::TernaryWork wt_;
  std::vector<char> work_;
  std::unique_ptr<algo::TernaryScales> scales_;
  std::unique_ptr<algo::TernaryCodec> codec_;
  size_t finalized_ = 0;
};

}  // namespace sieve::subnet

#endif  // SIEVE_SUBNET_QUANTIZED_GROUP_CODEC_H_
