// The quantized reduce-scatter: scales agreed piece by piece on the call's
// channel (ternary_scales.h), the ring's reduce-scatter over the TernaryCodec,
// then this rank's chunk dequantized once.
#include "ternary/quantized_reduce_scatter.h"

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
// levels) with this collective's kind and count (per rank), so a different
// recvcount, op or level on one rank fails the call on every rank.
algo::OpFingerprint Fingerprint(const TernaryArgs& a) {
  algo::OpFingerprint fp = TernaryFingerprint(a);
  fp.kind = algo::OpKind::kQuantizedReduceScatter;
  fp.count = a.base.count;
  fp.algo = algo::OpAlgo::kRing;
  return fp;
}

}  // namespace

Status QuantizedReduceScatter(Comm& comm, const TernaryArgs& a) {
  if (a.mask_idx != nullptr)
    return Status::Internal("quantized reduce-scatter: masks are not supported");
  const int n = comm.size(), r = comm.rank();
  const size_t count = a.base.count, total = count * static_cast<size_t>(n);
  const kernels::TernaryWork wt = kernels::TernaryWorkFor(n, a.levels);
  std::vector<float> scales((total + a.block - 1) / a.block, 0.0f);
  std::vector<char> work(total * static_cast<size_t>(wt));
  algo::TernaryInput input;
  input.src = TernarySourceOf(comm, a);
  input.src.scales = scales.data();
  if (n == 1) {
    kernels::TernaryAbsMax(input.src, total, scales.data());
    algo::TernaryCodec(input, algo::TernaryOutput{}, work.data(), n).LoadInput(0, total);
  } else {
    const algo::TernaryCodec sizes(input, algo::TernaryOutput{}, nullptr, n);  // wire sizes only
    const std::vector<size_t> bounds = algo::EqualBlocks(count, n);
    algo::RingOptions options;
    options.all_gather = false;
    options.segment_bytes = SegmentWireBytes(comm, sizes, a.base.dtype);
    options.inflight_bytes =
        plan::FlatRun(comm, plan::Algo::kRing, options.segment_bytes).inflight_bytes;
    plan::ChooseReduceScatter(comm, sizes.WireBytes(total, n));  // the ring
    if (!comm.is_view()) ++comm.stats().collectives;
    algo::Channel ch = comm.MakeChannel(Fingerprint(a), comm.NextSeq());
    // The scales go to every rank in pieces, in the order the ring first
    // quantizes their blocks; the codec waits for a piece only when it needs it.
    algo::TernaryScales agreed(
        ch,
        algo::CutScalePieces(total, a.block, bounds, algo::RingSegments(sizes, bounds, n, options)),
        scales.data());
    input.pending_scales = &agreed;
    // No output: the ring has no all-gather half, so it delivers nothing; this
    // rank's chunk is dequantized from work below.
    algo::TernaryCodec codec(input, algo::TernaryOutput{}, work.data(), n);
    Status data = agreed.Start(input.src);
    if (data.ok()) data = algo::RunRing(ch, codec, bounds, options);
    if (data.ok()) data = codec.status();
    if (data.ok()) data = agreed.Finish();  // every piece, and our scale sends
    SIEVE_RETURN_IF_ERROR(ch.Conclude(data));
  }
  // Rank r's chunk: s_b * Q / L (sum) or / (nL) (avg), rounded once to the datatype.
  const size_t first = static_cast<size_t>(r) * count;
  const int divisor = a.levels * (a.base.op == kernels::RedOp::kAvg ? n : 1);
  kernels::TernaryDequantizeRange(a.base.dtype, wt, work.data() + first * static_cast<size_t>(wt),
                                  first, count, a.block, scales.data(), divisor, a.base.recv);
  return Status::OK();
}

}  // namespace sieve::coll
