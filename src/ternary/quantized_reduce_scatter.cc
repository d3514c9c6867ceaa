// The quantized reduce-scatter: scales agreed piece by piece on the call's
// channel (ternary_scales.h), the ring's reduce-scatter over the TernaryCodec,
// then this rank's chunk dequantized once (under a mask, over the kept elements
// only: gathered by the codec, scattered with zeros by the dequantization).
#include "ternary/quantized_reduce_scatter.h"

#include <algorithm>
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
    const algo::TernaryCodec sizes(input, algo::TernaryOutput{}, nullptr, n);  // wire sizes only
    algo::RingOptions options;
    options.all_gather = false;
    options.segment_bytes = SegmentWireBytes(comm, sizes, a.base.dtype);
    options.inflight_bytes =
        plan::FlatRun(comm, plan::Algo::kRing, options.segment_bytes).inflight_bytes;
    plan::ChooseReduceScatter(comm, sizes.WireBytes(elems, n));  // the ring
    if (!comm.is_view()) ++comm.stats().collectives;
    algo::Channel ch = comm.MakeChannel(Fingerprint(a), comm.NextSeq());
    // The scales go to every rank in pieces, in the order the ring first
    // quantizes their blocks; the codec waits for a piece only when it needs it.
    algo::TernaryScales agreed(
        ch,
        algo::CutScalePieces(elems, a.block, bounds, algo::RingSegments(sizes, bounds, n, options)),
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
  // Rank r's chunk: s_b * Q / L (sum) or / (nL) (avg), rounded once to the
  // datatype; under a mask scattered to the kept positions, zeros elsewhere.
  const size_t first = bounds[r];
  const int divisor = a.levels * (a.base.op == kernels::RedOp::kAvg ? n : 1);
  const char* sums = work.data() + first * static_cast<size_t>(wt);
  if (!masked) {
    kernels::TernaryDequantizeRange(a.base.dtype, wt, sums, first, count, a.block, scales.data(),
                                    divisor, a.base.recv);
  } else if (count > 0) {
    const std::vector<uint64_t> bits = BitRange(a.mask_bits, static_cast<size_t>(r) * count, count);
    kernels::TernaryDequantizeScatter(a.base.dtype, wt, sums, first, a.block, scales.data(),
                                      divisor, bits.data(), 0, count, a.base.recv);
  }
  return Status::OK();
}

}  // namespace sieve::coll
