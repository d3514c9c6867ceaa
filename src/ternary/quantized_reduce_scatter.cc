// The quantized reduce-scatter: scales agreed piece by piece on the call's
// channel (ternary_scales.h), the ring's reduce-scatter over the TernaryCodec,
// then this rank's chunk dequantized once (under a mask, over the kept elements
// only: gathered by the codec, scattered with zeros by the dequantization).
#include "ternary/quantized_reduce_scatter.h"

#include <algorithm>
#include <memory>
#include <vector>

#include "algo/ring.h"
#include "algo/ring_pattern.h"
#include "core/log.h"
#include "plan/algo_choice.h"
#include "ternary/ternary_codec.h"
#include "ternary/ternary_scales.h"

namespace sieve::coll {

namespace {

// What every rank agrees on: the quantized call's fields (seed, step, block,
// levels) with this collective's kind and count (per rank; under a mask the
// elements quantized, as the masked all-reduce has), so a different recvcount,
// op or level on one rank fails the call on every rank.
algo::OpFingerprint Fingerprint(const TernaryArgs& a) {
  algo::OpFingerprint fp = TernaryFingerprint(a);
  fp.kind = algo::OpKind::kQuantizedReduceScatter;
  if (a.mask_idx == nullptr) fp.count = a.base.count;
  fp.algo = algo::OpAlgo::kRing;
  return fp;
}

// The ring's chunks: chunk c holds the quantized elements of rank c's block
// [c * count, (c + 1) * count) (under a mask, its kept ones: chunks then differ).
std::vector<size_t> Chunks(const TernaryArgs& a, int n) {
  std::vector<size_t> bounds = algo::EqualBlocks(a.base.count, n);
  if (a.mask_idx == nullptr) return bounds;
  for (size_t& b : bounds)
    b = static_cast<size_t>(std::lower_bound(a.mask_idx, a.mask_idx + a.mask_nnz, b) - a.mask_idx);
  return bounds;
}

// Bits [first, first + count) of `bits`, from bit 0.
std::vector<uint64_t> BitRange(const uint64_t* bits, size_t first, size_t count) {
  std::vector<uint64_t> out((count + 63) / 64, 0);
  for (size_t i = 0; i < count; ++i)
    out[i / 64] |= ((bits[(first + i) / 64] >> ((first + i) % 64)) & 1) << (i % 64);
  return out;
}

}  // namespace

// The call's channel, its ring and its scale agreement (one per call).
struct QuantizedReduceScatterCall {
  QuantizedReduceScatterCall(Comm& comm, const TernaryArgs& a, size_t elems,
                             const algo::Codec& sizes, const algo::RingOptions& ring,
                             float* scales)
      : args(a),
        n(comm.size()),
        bounds(Chunks(a, n)),
        options(ring),
        ch(comm.MakeChannel(Fingerprint(a), comm.NextSeq())),
        // The scales go to every rank in pieces, in the order the ring first
        // quantizes their blocks; the codec waits for a piece only when it needs it.
        agreed(ch,
               algo::CutScalePieces(elems, a.block, bounds,
                                    algo::RingSegments(sizes, bounds, n, options)),
               scales) {}

  // The ring's reduce-scatter of `input` into `work`. No output: the ring has no
  // all-gather half, so it delivers nothing; this rank's chunk is read from work.
  Status Ring(const algo::TernaryInput& input, char* work) {
    algo::TernaryCodec codec(input, algo::TernaryOutput{}, work, n);
    Status data = algo::RunRing(ch, codec, bounds, options);
    return data.ok() ? codec.status() : data;
  }

  const TernaryArgs args;
  const int n;
  const std::vector<size_t> bounds;
  const algo::RingOptions options;
  algo::Channel ch;
  algo::TernaryScales agreed;
};

namespace {

// Opens the call of `elems` quantized elements on n > 1 ranks (scales: nblocks floats).
std::shared_ptr<QuantizedReduceScatterCall> Open(Comm& comm, const TernaryArgs& a, size_t elems,
                                                 float* scales) {
  algo::TernaryInput input;
  input.src = TernarySourceOf(comm, a);
  const algo::TernaryCodec sizes(input, algo::TernaryOutput{}, nullptr, comm.size());  // sizes only
  algo::RingOptions options;
  options.all_gather = false;
  options.segment_bytes = SegmentWireBytes(comm, sizes, a.base.dtype);
  options.inflight_bytes =
      plan::FlatRun(comm, plan::Algo::kRing, options.segment_bytes).inflight_bytes;
  plan::ChooseReduceScatter(comm, sizes.WireBytes(elems, comm.size()));  // the ring
  if (!comm.is_view()) ++comm.stats().collectives;
  return std::make_shared<QuantizedReduceScatterCall>(comm, a, elems, sizes, options, scales);
}

}  // namespace

Status QuantizedReduceScatter(Comm& comm, const TernaryArgs& a) {
  const int n = comm.size(), r = comm.rank();
  const size_t count = a.base.count;
  const bool masked = a.mask_idx != nullptr;
  const size_t elems = masked ? a.mask_nnz : count * static_cast<size_t>(n);  // quantized
  const kernels::TernaryWork wt = kernels::TernaryWorkFor(n, a.levels);
  std::vector<float> scales((elems + a.block - 1) / a.block, 0.0f);
  std::vector<char> work(elems * static_cast<size_t>(wt));
  const std::vector<size_t> bounds = Chunks(a, n);
  algo::TernaryInput input;
  input.src = TernarySourceOf(comm, a);
  input.src.scales = scales.data();
  if (n == 1) {
    kernels::TernaryAbsMax(input.src, elems, scales.data());
    algo::TernaryCodec(input, algo::TernaryOutput{}, work.data(), n).LoadInput(0, elems);
  } else {
    std::shared_ptr<QuantizedReduceScatterCall> call = Open(comm, a, elems, scales.data());
    input.pending_scales = &call->agreed;
    Status data = call->agreed.Start(input.src);
    if (data.ok()) data = call->Ring(input, work.data());
    if (data.ok()) data = call->agreed.Finish();  // every piece, and our scale sends
    SIEVE_RETURN_IF_ERROR(call->ch.Conclude(data));
  }
  // Rank r's chunk: s_b * Q / L (sum) or / (nL) (avg), rounded once to the
  // datatype; under a mask scattered to the kept positions, zeros elsewhere.
  const size_t first = bounds[r];
  const int divisor = a.levels * (a.base.op == kernels::RedOp::kAvg ? n : 1);
  const char* sums = work.data() + first * static_cast<size_t>(wt);
  const kernels::OutputStores stores =
      algo::OutputStoresFor(count * kernels::DTypeSize(a.base.dtype), comm.config().stream_bytes);
  if (!masked) {
    kernels::TernaryDequantizeRange(a.base.dtype, wt, sums, first, count, a.block, scales.data(),
                                    divisor, a.base.recv, stores);
  } else if (count > 0) {
    const std::vector<uint64_t> bits = BitRange(a.mask_bits, static_cast<size_t>(r) * count, count);
    kernels::TernaryDequantizeScatter(a.base.dtype, wt, sums, first, a.block, scales.data(),
                                      divisor, bits.data(), 0, count, a.base.recv, stores);
  }
  return Status::OK();
}

Status QuantizedReduceScatterAgreeScales(Comm& comm, const TernaryArgs& a, float* scales,
                                         size_t nblocks,
                                         std::shared_ptr<QuantizedReduceScatterCall>* call) {
  if (comm.size() < 2 || a.mask_idx != nullptr || a.residual != nullptr)
    return Status::Internal("quantized reduce-scatter on device buffers: one rank, a mask or a "
                            "host residual");
  const size_t elems = a.base.count * static_cast<size_t>(comm.size());
  std::shared_ptr<QuantizedReduceScatterCall> c = Open(comm, a, elems, scales);
  Status st = nblocks == (elems + a.block - 1) / a.block
                  ? Status::OK()
                  : Status::Internal(StrFormat("quantized reduce-scatter: %zu scale blocks where "
                                               "%zu were expected",
                                               nblocks, (elems + a.block - 1) / a.block));
  if (st.ok()) st = c->agreed.StartComputed();
  if (st.ok()) st = c->agreed.Finish();
  if (!st.ok()) return c->ch.Conclude(st);  // no exchange follows: every peer hears it failed
  *call = std::move(c);
  return Status::OK();
}

Status QuantizedReduceScatterFromCodes(Comm& comm, QuantizedReduceScatterCall* call,
                                       const float* scales, const void* wire, size_t lead,
                                       void* sums_wire) {
  if (call == nullptr)
    return Status::Internal("quantized reduce-scatter: the scales were not agreed");
  const TernaryArgs& a = call->args;
  const int n = call->n;
  const size_t count = a.base.count, first = call->bounds[comm.rank()];
  const kernels::TernaryWork wt = kernels::TernaryWorkFor(n, a.levels);
  const size_t esize = static_cast<size_t>(wt);
  std::vector<char> work(count * static_cast<size_t>(n) * esize);
  algo::TernaryInput input;
  input.src = TernarySourceOf(comm, a);
  input.src.scales = scales;
  input.quantized = wire;  // the codec reads the codes range by range
  Status data = call->Ring(input, work.data());
  if (data.ok() && lead > first)
    data = Status::Internal("quantized reduce-scatter: the lead runs before the buffer");
  if (data.ok()) {
    // The lead's sums (another rank's chunk, partial here) travel as zeros.
    char* from = work.data() + (first - lead) * esize;
    std::fill(from, from + lead * esize, 0);
    kernels::TernaryPack(wt, from, lead + count, kernels::TernaryBits(n * a.levels), sums_wire);
  }
  return call->ch.Conclude(data);
}

}  // namespace sieve::coll
