// Ternary all-reduce: scales first (counted traffic, like any collective),
// then the same RunRing/RunTree as the dense all-reduce over integer partial
// sums, each range delivered as s_b * Q (or s_b * Q / n) rounded once to the
// output type on its last hop.
#include "ternary/ternary_allreduce.h"

#include <algorithm>
#include <chrono>
#include <vector>

#include "algo/ring.h"
#include "algo/ring_pattern.h"
#include "ternary/ternary_codec.h"
#include "algo/tree.h"
#include "coll/hier.h"
#include "core/log.h"
#include "plan/algo_choice.h"
#include "kernels/masked_pack.h"
#include "kernels/reduce.h"
#include "plan/link_probe.h"
#include "kernels/ternary_feedback.h"

namespace sieve::coll {

namespace {

using Clock = std::chrono::steady_clock;

double MsSince(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

// s_b = max over ranks of max |g| in block b of the `elems` quantized elements.
// TRACE: the time of the local pass and of the agreement (which waits for the
// slowest rank's pass too), for finding a call's fixed costs.
Status AgreeOnScales(Comm& comm, const TernaryArgs& a, const void* in, const uint32_t* idx,
                     size_t elems, std::vector<float>* scales) {
  const Clock::time_point start = Clock::now();
  scales->assign((elems + a.block - 1) / a.block, 0.0f);
  kernels::TernaryAbsMax(a.base.dtype, in, idx, elems, a.block, scales->data());
  const double absmax_ms = MsSince(start);
  const Clock::time_point agreeing = Clock::now();
  Status st = TernaryAgreeScales(comm, scales->data(), scales->size());
  SIEVE_TRACE(kLogColl, "ternary scales: abs-max %.2f ms, all-reduce-max of %zu %.2f ms",
              absmax_ms, scales->size(), MsSince(agreeing));
  return st;
}

// Wire bytes of one pipelining segment: as many elements as a dense segment of
// the same input (SIEVE_SEGMENT_BYTES / element size) would hold, not
// SIEVE_SEGMENT_BYTES of the ~10x smaller wire. Otherwise a 16 MiB call is one
// segment per chunk and each ring step quantizes, adds or dequantizes a whole
// chunk while the link idles; this way the per-segment CPU work matches the
// dense ring's and overlaps the network. The same on every rank (it depends
// on the config, datatype and size only), so message sizes agree.
size_t SegmentWireBytes(const Comm& comm, const algo::TernaryCodec& codec, kernels::DType dtype) {
  const size_t elems = std::max<size_t>(1, comm.config().segment_bytes / kernels::DTypeSize(dtype));
  return codec.WireBytes(elems, comm.size());
}

// The ring, tree or direct exchange (`chosen`, plan::ChooseTernaryAllReduce's flat choice).
Status Exchange(Comm& comm, const TernaryArgs& a, algo::TernaryCodec& codec, size_t elems,
                plan::Algo chosen) {
  uint32_t seq = comm.NextSeq();
  const size_t segment_bytes = SegmentWireBytes(comm, codec, a.base.dtype);
  const algo::AllReduceRun run = plan::FlatRun(comm, chosen, segment_bytes);
  algo::OpFingerprint fp;
  fp.kind = algo::OpKind::kTernaryAllReduce;
  fp.count = elems;
  fp.dtype = static_cast<uint8_t>(a.base.dtype);
  fp.op = static_cast<uint8_t>(a.base.op);
  fp.algo = run.algo;
  // Seed, step and block must agree, or the ranks' codes do not add up.
  fp.mode = a.seed * 0x9e3779b97f4a7c15ull ^ (a.step << 20) ^ a.block;
  algo::Channel ch = comm.MakeChannel(fp, seq);
  const Clock::time_point start = Clock::now();
  Status data = algo::RunAllReduce(ch, codec, elems, run);
  const double data_ms = MsSince(start);
  const Clock::time_point concluding = Clock::now();
  Status st = ch.Conclude(data);
  SIEVE_TRACE(kLogColl, "ternary #%u: %s of %zu segment bytes %.2f ms, agreement %.2f ms", seq,
              algo::OpAlgoName(run.algo), segment_bytes, data_ms, MsSince(concluding));
  return st;
}

algo::TernaryInput InputOf(Comm& comm, const TernaryArgs& a, const float* scales) {
  algo::TernaryInput input;
  input.dtype = a.base.dtype;
  input.block = a.block;
  input.scales = scales;
  input.rng = kernels::PhiloxStream{
      a.seed, static_cast<uint32_t>(a.rng_rank >= 0 ? a.rng_rank : comm.rank()), a.step};
  return input;
}

// The flat choice (`chosen`) over `elems` quantized elements of `input`, each
// range delivered into a.base.recv (scattered through the mask, if any); or,
// with `sums_wire`, the final sums packed there in TernaryBits(n) bits instead.
Status RunCodec(Comm& comm, const TernaryArgs& a, const algo::TernaryInput& input,
                size_t elems, plan::Algo chosen, void* sums_wire = nullptr) {
  const CollArgs& b = a.base;
  const int n = comm.size();
  algo::TernaryOutput output;
  output.data = sums_wire != nullptr ? nullptr : b.recv;
  output.divisor = b.op == kernels::RedOp::kAvg ? (a.divisor > 0 ? a.divisor : n) : 1;
  if (a.mask_idx != nullptr) {
    output.bits = a.mask_bits;
    output.idx = a.mask_idx;
    output.nnz = a.mask_nnz;
    output.count = b.count;
  }
  const kernels::TernaryWork wt = kernels::TernaryWorkFor(n);
  std::vector<char> work(elems * static_cast<size_t>(wt));
  algo::TernaryCodec codec(input, output, work.data(), n);
  if (n == 1) {
    codec.LoadInput(0, elems);
    codec.Deliver(0, elems);
  } else {
    SIEVE_RETURN_IF_ERROR(Exchange(comm, a, codec, elems, chosen));
  }
  // Work keeps every range's final sums after the exchange (algo/codec.h).
  if (sums_wire != nullptr)
    kernels::TernaryPack(wt, work.data(), elems, kernels::TernaryBits(n), sums_wire);
  return Status::OK();
}

// Slices cut at block boundaries so every block has one scale, as on a flat run.
Status HierTernary(Comm& comm, const TernaryArgs& a) {
  const int root_rank = comm.rank(), n = comm.size();
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

// The scales' all-reduce-max as one exchange (plan::ScalesInOneExchange): our
// scales to every rank, theirs from every rank, the maximum taken in rank order
// (the same bits everywhere, NaN included). Fingerprints still checked; the
// verdict is the data step's.
Status ExchangeScalesMax(Comm& comm, float* scales, size_t nblocks) {
  const int n = comm.size(), me = comm.rank();
  const uint32_t seq = comm.NextSeq();
  if (!comm.is_view()) ++comm.stats().collectives;
  algo::OpFingerprint fp;
  fp.kind = algo::OpKind::kAllReduce;
  fp.count = nblocks;
  fp.dtype = static_cast<uint8_t>(kernels::DType::kFloat32);
  fp.op = static_cast<uint8_t>(kernels::RedOp::kMax);
  fp.algo = algo::OpAlgo::kDirect;
  algo::Channel ch = comm.MakeChannel(fp, seq, /*verdicts=*/false);
  if (comm.FirstUse("ternary scales", nblocks * sizeof(float)))
    SIEVE_INFO(kLogColl, "ternary scales (%zu blocks) on %d ranks: one exchange with every rank "
               "(round trip %.3g ms)", nblocks, n, comm.link_rtt_s() * 1e3);
  const size_t bytes = nblocks * sizeof(float);
  std::vector<float> all(nblocks * static_cast<size_t>(n));
  std::copy(scales, scales + nblocks, all.begin() + static_cast<size_t>(me) * nblocks);
  Status data;
  for (int p = 0; p < n && data.ok(); ++p)
    if (p != me) data = ch.Recv(p, all.data() + static_cast<size_t>(p) * nblocks, bytes);
  for (int p = 0; p < n && data.ok(); ++p)
    if (p != me) data = ch.Send(p, scales, bytes);
  if (data.ok()) data = ch.WaitAll();
  if (data.ok()) {
    std::copy(all.begin(), all.begin() + nblocks, scales);
    for (int p = 1; p < n; ++p)
      kernels::Reduce(kernels::DType::kFloat32, kernels::RedOp::kMax, scales,
                      all.data() + static_cast<size_t>(p) * nblocks, scales, nblocks);
  }
  return ch.Conclude(data);
}

}  // namespace

Status TernaryAgreeScales(Comm& comm, float* scales, size_t nblocks) {
  if (comm.size() == 1) return Status::OK();
  if (plan::ScalesInOneExchange(comm.size(), nblocks * sizeof(float), plan::LinkOf(comm)))
    return ExchangeScalesMax(comm, scales, nblocks);
  CollArgs max;
  max.send = scales;
  max.recv = scales;
  max.count = nblocks;
  max.dtype = kernels::DType::kFloat32;
  max.op = kernels::RedOp::kMax;
  return AllReduce(comm, max);
}

Status TernaryAllReduceQuantized(Comm& comm, const TernaryArgs& a, const float* scales,
                                 const void* wire, void* sums_wire) {
  // The codec reads codes in its work type: widen the 2-bit wire once.
  const kernels::TernaryWork wt = kernels::TernaryWorkFor(comm.size());
  std::vector<char> codes(a.base.count * static_cast<size_t>(wt));
  kernels::TernaryUnpack(wt, wire, a.base.count, kernels::TernaryBits(1), /*accumulate=*/false,
                         codes.data());
  algo::TernaryInput input = InputOf(comm, a, scales);
  input.quantized = codes.data();
  const plan::Algo chosen =
      plan::ChooseTernaryAllReduce(comm, a.base.count, "codes quantized on the device")
          .algo;
  return RunCodec(comm, a, input, a.base.count, chosen, sums_wire);
}

Status TernaryAllReduce(Comm& comm, const TernaryArgs& a) {
  const CollArgs& b = a.base;
  const size_t es = kernels::DTypeSize(b.dtype);
  const bool masked = a.mask_idx != nullptr;
  const size_t elems = masked ? a.mask_nnz : b.count;  // elements quantized
  const plan::Algo chosen =
      plan::ChooseTernaryAllReduce(comm, elems,
                                   a.residual != nullptr ? "error feedback"
                                   : masked              ? "a mask the codec gathers"
                                                         : nullptr)
          .algo;
  if (chosen == plan::Algo::kHier) return HierTernary(comm, a);
  // Read straight from sendbuff (gathered through the mask), except with error
  // feedback: then the rank quantizes g + e_prev, rounded to the datatype, built
  // here in one buffer (gathered first under a mask).
  const void* in = b.send;
  const uint32_t* gather = a.mask_idx;
  std::vector<char> fed;
  if (a.residual != nullptr) {
    fed.resize(elems * es);
    const void* g = b.send;
    if (masked) {
      kernels::MaskedPack(es, b.send, a.mask_idx, elems, fed.data());
      g = fed.data();
    }
    kernels::TernaryFeedbackApply(b.dtype, g, a.residual, fed.data(), elems);
    in = fed.data();
    gather = nullptr;
  }
  std::vector<float> scales;
  SIEVE_RETURN_IF_ERROR(AgreeOnScales(comm, a, in, gather, elems, &scales));
  algo::TernaryInput input = InputOf(comm, a, scales.data());
  input.data = in;
  input.idx = gather;
  SIEVE_RETURN_IF_ERROR(RunCodec(comm, a, input, elems, chosen));
  if (a.residual != nullptr)
    kernels::TernaryFeedbackUpdate(b.dtype, in, elems, a.block, scales.data(), input.rng,
                                   a.residual);
  return Status::OK();
}

}  // namespace sieve::coll
