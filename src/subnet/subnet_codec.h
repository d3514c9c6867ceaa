// SubnetCodec: one group's element ranges, concatenated into the index space
// the ring works in. Elements travel as they are; intermediate hops add, and
// the last reduce-scatter combine divides by the group's coverage in the same
// pass (kernels::SumDivide), so no separate division pass touches the data.
// Only the group's ranges of input and work are ever read or written.
#ifndef SIEVE_SUBNET_SUBNET_CODEC_H_
#define SIEVE_SUBNET_SUBNET_CODEC_H_

#include "algo/codec.h"
#include "kernels/dtype.h"
#include "subnet/group_ranges.h"

namespace sieve::subnet {

// A group's codec (dense, or quantized: quantized_group_codec.h), as the
// exchange drives it: it writes recvbuff's pieces of the group only.
class GroupCodec : public algo::Codec {
 public:
  // Elements of this rank's chunk whose final average is in recvbuff: the
  // whole chunk once its reduce-scatter is done (then it may go to receivers).
  virtual size_t finalized() const = 0;
};

class SubnetCodec : public GroupCodec {
 public:
  // input and work may be the same buffer (in place); `ranges` must outlive the
  // codec. divisor: the number of ranks whose sum is averaged (the ring's size).
  // REQUIRES: dtype is float32, float16, bfloat16 or float64. Where the last
  // combine of a range is its first (the ring: it carries divisor - 1
  // contributions) it divides in the same pass; otherwise (the direct exchange)
  // Finalize divides.
  SubnetCodec(const void* input, void* work, kernels::DType dtype, const GroupRanges& ranges,
              int divisor);

  size_t WireBytes(size_t elems, int contributions) const override;
  bool EncodeUsesScratch() const override { return true; }
  // Only a piece that straddles a range boundary is gathered.
  bool EncodeNeedsScratch(size_t offset, size_t elems, int contributions) const override;
  const void* Encode(size_t offset, size_t elems, int contributions, void* scratch) override;
  void ReduceInto(size_t offset, size_t elems, int contributions, const void* wire,
                  bool first) override;
  void LoadInput(size_t offset, size_t elems) override;
  // Divides unless the range's last combine did; counts the elements that are final.
  void Finalize(size_t offset, size_t elems) override;
  // Elements Finalize()d so far.
  size_t finalized() const override { return finalized_; }
  void* DirectTarget(size_t offset, size_t elems) override;
  void Decode(size_t offset, size_t elems, const void* wire) override;

 private:
  const char* input_;
  char* work_;
  kernels::DType dtype_;
  size_t elem_size_;
  const GroupRanges& ranges_;
  int divisor_;
  size_t finalized_ = 0;
  // The range the latest combine completed and divided (SIZE_MAX: none).
  size_t divided_offset_ = SIZE_MAX, divided_elems_ = 0;
};

}  // namespace sieve::subnet

#endif  // SIEVE_SUBNET_SUBNET_CODEC_H_
