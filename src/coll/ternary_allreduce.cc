// Ternary all-reduce: scales first (counted traffic, like any collective),
// then the same RunRing/RunTree as the dense all-reduce over integer partial
// sums, then s_b * Q (or s_b * Q / n) rounded once to the output type.
#include "coll/ternary_allreduce.h"

#include <vector>

#include "algo/ring.h"
#include "algo/ring_pattern.h"
#include "algo/ternary_codec.h"
#include "algo/tree.h"
#include "coll/hier.h"
#include "core/log.h"
#include "kernels/ternary_feedback.h"

namespace sieve::coll {

namespace {

// s_b = max over ranks of max |g| in block b.
Status AgreeOnScales(Comm& comm, const TernaryArgs& a, const void* in,
                     std::vector<float>* scales) {
  const CollArgs& b = a.base;
  scales->assign((b.count + a.block - 1) / a.block, 0.0f);
  kernels::TernaryAbsMax(b.dtype, in, b.count, a.block, scales->data());
  if (comm.size() == 1) return Status::OK();
  CollArgs max;
  max.send = scales->data();
  max.recv = scales->data();
  max.count = scales->size();
  max.dtype = kernels::DType::kFloat32;
  max.op = kernels::RedOp::kMax;
  return AllReduce(comm, max);
}

// Slices cut at block boundaries so every block has one scale, as on a flat run.
Status HierTernary(Comm& comm, const TernaryArgs& a) {
  const int root_rank = comm.rank(), n = comm.size();
  if (comm.FirstUse("allreduce-ternary-hier", a.base.count * kernels::DTypeSize(a.base.dtype)))
    SIEVE_INFO(kLogColl,
               "ternary allreduce of %zu elements on %s: hierarchical (dense inside "
               "hosts, ternary between hosts)",
               a.base.count, comm.hosts().Describe().c_str());
  return HierAllReduce(comm, a.base, HierBounds(a.base.count, comm.hosts().max_local, a.block),
                       [&](Comm& cross, void* slice, size_t, size_t count) -> Status {
                         TernaryArgs s = a;
                         s.base.send = slice;
                         s.base.recv = slice;
                         s.base.count = count;
                         s.rng_rank = root_rank;
                         s.divisor = n;
                         return TernaryAllReduce(cross, s);
                       });
}

}  // namespace

Status TernaryAllReduce(Comm& comm, const TernaryArgs& a) {
  if (a.residual == nullptr && UseHier(comm, a.base.count)) return HierTernary(comm, a);
  const CollArgs& b = a.base;
  // With error feedback the rank quantizes g + e_prev (rounded to the datatype).
  std::vector<char> fed;
  const void* in = b.send;
  if (a.residual != nullptr) {
    fed.resize(b.count * kernels::DTypeSize(b.dtype));
    kernels::TernaryFeedbackApply(b.dtype, b.send, a.residual, fed.data(), b.count);
    in = fed.data();
  }
  std::vector<float> scales;
  SIEVE_RETURN_IF_ERROR(AgreeOnScales(comm, a, in, &scales));
  const int n = comm.size();
  algo::TernaryInput input;
  input.data = in;
  input.dtype = b.dtype;
  input.block = a.block;
  input.scales = scales.data();
  input.rng = kernels::PhiloxStream{
      a.seed, static_cast<uint32_t>(a.rng_rank >= 0 ? a.rng_rank : comm.rank()), a.step};
  const kernels::TernaryWork wt = kernels::TernaryWorkFor(n);
  std::vector<char> work(b.count * static_cast<size_t>(wt));
  algo::TernaryCodec codec(input, work.data(), n);
  if (n == 1) {
    codec.LoadInput(0, b.count);
  } else {
    uint32_t seq = comm.NextSeq();
    size_t wire = codec.WireBytes(b.count, n);
    bool tree = UseTree(comm, wire);
    algo::OpFingerprint fp;
    fp.kind = algo::OpKind::kTernaryAllReduce;
    fp.count = b.count;
    fp.dtype = static_cast<uint8_t>(b.dtype);
    fp.op = static_cast<uint8_t>(b.op);
    fp.algo = tree ? algo::OpAlgo::kTree : algo::OpAlgo::kRing;
    // Seed, step and block must agree, or the ranks' codes do not add up.
    fp.mode = a.seed * 0x9e3779b97f4a7c15ull ^ (a.step << 20) ^ a.block;
    algo::Channel ch = comm.MakeChannel(fp, seq);
    if (comm.FirstUse("allreduce-ternary", wire))
      SIEVE_INFO(kLogColl, "ternary allreduce of %zu elements (%s, block %zu) on %d ranks: %s",
                 b.count, kernels::DTypeName(b.dtype), a.block, n, tree ? "tree" : "ring");
    if (tree) {
      SIEVE_RETURN_IF_ERROR(
          ch.Conclude(algo::RunTree(ch, codec, b.count, comm.config().segment_bytes)));
    } else {
      algo::RingOptions options;
      options.segment_bytes = comm.config().segment_bytes;
      SIEVE_RETURN_IF_ERROR(
          ch.Conclude(algo::RunRing(ch, codec, algo::BalancedSplit(b.count, n), options)));
    }
  }
  if (a.residual != nullptr)
    kernels::TernaryFeedbackUpdate(b.dtype, in, b.count, a.block, scales.data(), input.rng,
                                   a.residual);
  int divisor = b.op == kernels::RedOp::kAvg ? (a.divisor > 0 ? a.divisor : n) : 1;
  kernels::TernaryDequantize(b.dtype, wt, work.data(), b.count, a.block, scales.data(), divisor,
                             b.recv);
  return Status::OK();
}

}  // namespace sieve::coll
