// QuantizedGroupCodec: the ternary codec without an output (its sums stay in
// work), and the dequantization of each delivered range into the group's pieces
// of recvbuff (kernels::TernaryDequantizeRange per contiguous piece: no copy,
// no zero-fill between the pieces).
#include "subnet/quantized_group_codec.h"

namespace sieve::subnet {

QuantizedGroupCodec::QuantizedGroupCodec(algo::Channel& ring, const GroupRanges& ranges,
                                         const std::vector<size_t>& bounds, int chunk,
                                         const algo::RingOptions& options, const void* send,
                                         void* recv, kernels::DType dtype,
                                         const GroupQuantization& q, int rank,
                                         float* residual)
    : ranges_(ranges),
      recv_(static_cast<char*>(recv)),
      divisor_(ring.size() * q.levels),
      chunk_begin_(bounds[static_cast<size_t>(chunk)]),
      chunk_end_(bounds[static_cast<size_t>(chunk) + 1]),
      positions_(ranges.Positions()),
      residual_(residual),
      wt_(kernels::TernaryWorkFor(ring.size(), q.levels)) {
  const size_t elems = positions_.size();
  src_.dtype = dtype;
  src_.levels = q.levels;
  src_.data = send;
  src_.idx = positions_.data();
  src_.block = q.block;
  src_.rng = kernels::PhiloxStream{q.seed, static_cast<uint32_t>(rank), q.step};
  if (residual_ != nullptr) {
    group_residual_.resize(elems);
    for (size_t j = 0; j < elems; ++j) group_residual_[j] = residual_[positions_[j]];
    src_.residual = group_residual_.data();
  }
  scale_values_.assign((elems + q.block - 1) / q.block, 0.0f);
  src_.scales = scale_values_.data();
  work_.resize(elems * static_cast<size_t>(wt_));
  algo::TernaryInput input;
  input.src = src_;
  // The wire sizes decide the ring's segments, and they the scale pieces.
  const algo::TernaryCodec sizes(input, algo::TernaryOutput{}, nullptr, ring.size());
  scales_ = std::make_unique<algo::TernaryScales>(
      ring,
      algo::CutScalePieces(elems, q.block, bounds,
                           algo::RingSegments(sizes, bounds, ring.size(), options)),
      scale_values_.data());
  input.pending_scales = scales_.get();
  codec_ = std::make_unique<algo::TernaryCodec>(input, algo::TernaryOutput{}, work_.data(),
                                                ring.size());
}

Status QuantizedGroupCodec::Finish() {
  SIEVE_RETURN_IF_ERROR(scales_->Finish());
  for (size_t j = 0; j < group_residual_.size(); ++j) residual_[positions_[j]] = group_residual_[j];
  return Status::OK();
}

void QuantizedGroupCodec::Deliver(size_t offset, size_t elems) {
  codec_->Deliver(offset, elems);  // no output: the sums stay in work
  scales_->Ensure(offset, elems);  // agreed when this rank quantized the range
  const size_t es = kernels::DTypeSize(src_.dtype);
  const char* sums = work_.data();
  ranges_.ForEachPiece(offset, elems, [&](size_t buf, size_t n, size_t pos) {
    const size_t at = offset + pos;
    kernels::TernaryDequantizeRange(src_.dtype, wt_, sums + at * static_cast<size_t>(wt_), at, n,
                                    src_.block, src_.scales, divisor_, recv_ + buf * es);
  });
  if (offset >= chunk_begin_ && offset + elems <= chunk_end_) finalized_ += elems;
}

}  // namespace sieve::subnet
