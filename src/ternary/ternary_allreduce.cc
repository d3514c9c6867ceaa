// Ternary all-reduce: scales first (counted traffic, like any collective),
// then the same RunRing/RunTree as the dense all-reduce over integer partial
// sums, each range delivered as s_b * Q (or s_b * Q / n) rounded once to the
// output type on its last hop.
#include "ternary/ternary_allreduce.h"

#include <algorithm>
#include <chrono>
#include <limits>
#include <vector>

#include "algo/ring.h"
#include "algo/ring_pattern.h"
#include "ternary/ternary_codec.h"
#include "algo/tree.h"
#include "coll/hier.h"
#include "core/log.h"
#include "plan/algo_choice.h"
#include "kernels/reduce.h"
#include "plan/link_probe.h"

namespace sieve::coll {

namespace {

using Clock = std::chrono::steady_clock;

double MsSince(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

// s_b = max over ranks of max |g| in block b of the `elems` quantized elements
// (g + e_prev as sent, with error feedback); NaN where any rank's block is not
// finite. TRACE: the time of the local pass and of the agreement (which waits
// for the slowest rank's pass too), for finding a call's fixed costs.
Status AgreeOnScales(Comm& comm, const TernaryArgs& a, const kernels::TernarySource& src,
                     size_t elems, std::vector<float>* scales) {
  const Clock::time_point start = Clock::now();
  scales->assign((elems + a.block - 1) / a.block, 0.0f);
  kernels::TernaryAbsMax(src, elems, scales->data());
  const double absmax_ms = MsSince(start);
  const Clock::time_point agreeing = Clock::now();
  Status st = TernaryAgreeScales(comm, a, scales->data(), scales->size());
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
  algo::OpFingerprint fp = TernaryFingerprint(a);
  fp.algo = run.algo;
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

// What this rank quantizes: sendbuff (gathered through the mask, if any), plus
// its residual with error feedback; scales are set once agreed.
kernels::TernarySource SourceOf(Comm& comm, const TernaryArgs& a) {
  kernels::TernarySource src;
  src.dtype = a.base.dtype;
  src.data = a.base.send;
  src.idx = a.mask_idx;
  src.residual = a.residual;
  src.block = a.block;
  src.rng = kernels::PhiloxStream{
      a.seed, static_cast<uint32_t>(a.rng_rank >= 0 ? a.rng_rank : comm.rank()), a.step};
  return src;
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
Status ExchangeScalesMax(Comm& comm, const algo::OpFingerprint& call, float* scales,
                         size_t nblocks) {
  const int n = comm.size(), me = comm.rank();
  const uint32_t seq = comm.NextSeq();
  if (!comm.is_view()) ++comm.stats().collectives;
  algo::OpFingerprint fp = call;  // the ternary call's, as the dense max's would carry
  fp.algo = algo::OpAlgo::kDirect;
  algo::Channel ch = comm.MakeChannel(fp, seq, transport::MemoryType::kHost, /*verdicts=*/false);
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

algo::OpFingerprint TernaryFingerprint(const TernaryArgs& a) {
  algo::OpFingerprint fp;
  fp.kind = algo::OpKind::kTernaryAllReduce;
  fp.count = a.mask_idx != nullptr ? a.mask_nnz : a.base.count;  // the elements quantized
  fp.dtype = static_cast<uint8_t>(a.base.dtype);
  fp.op = static_cast<uint8_t>(a.base.op);
  // Seed, step and block must agree, or the ranks' codes do not add up.
  fp.mode = algo::TernaryMode(a.seed, a.step, a.block);
  return fp;
}

// A NaN scale (non-finite input) must win the max on every rank whatever the
// order of the hops, which the dense max (a > b ? a : b) does not promise for
// NaN: it travels as +infinity, which no finite scale exceeds, and comes back.
Status TernaryAgreeScales(Comm& comm, const TernaryArgs& a, float* scales, size_t nblocks) {
  if (comm.size() == 1) return Status::OK();
  const algo::OpFingerprint call = TernaryFingerprint(a);
  const float inf = std::numeric_limits<float>::infinity();
  for (size_t b = 0; b < nblocks; ++b)
    if (!(scales[b] < inf)) scales[b] = inf;  // NaN or +infinity
  if (plan::ScalesInOneExchange(comm.size(), nblocks * sizeof(float), plan::LinkOf(comm))) {
    Status st = ExchangeScalesMax(comm, call, scales, nblocks);
    for (size_t b = 0; b < nblocks; ++b)
      if (!(scales[b] < inf)) scales[b] = std::numeric_limits<float>::quiet_NaN();
    return st;
  }
  CollArgs max;
  max.call = &call;
  max.send = scales;
  max.recv = scales;
  max.count = nblocks;
  max.dtype = kernels::DType::kFloat32;
  max.op = kernels::RedOp::kMax;
  Status st = AllReduce(comm, max);
  for (size_t b = 0; b < nblocks; ++b)
    if (!(scales[b] < inf)) scales[b] = std::numeric_limits<float>::quiet_NaN();
  return st;
}

Status TernaryAllReduceQuantized(Comm& comm, const TernaryArgs& a, const float* scales,
                                 const void* wire, void* sums_wire) {
  algo::TernaryInput input;
  input.src = SourceOf(comm, a);
  input.src.scales = scales;
  input.quantized = wire;  // the codec reads the 2-bit codes range by range
  const plan::Algo chosen =
      plan::ChooseTernaryAllReduce(comm, a.base.count, "codes quantized on the device")
          .algo;
  return RunCodec(comm, a, input, a.base.count, chosen, sums_wire);
}

Status TernaryAllReduce(Comm& comm, const TernaryArgs& a) {
  const bool masked = a.mask_idx != nullptr;
  const size_t elems = masked ? a.mask_nnz : a.base.count;  // elements quantized
  const plan::Algo chosen =
      plan::ChooseTernaryAllReduce(comm, elems,
                                   a.residual != nullptr ? "error feedback"
                                   : masked              ? "a mask the codec gathers"
                                                         : nullptr)
          .algo;
  if (chosen == plan::Algo::kHier) return HierTernary(comm, a);
  // Two passes over the input: the abs-max, then the codec's quantization
  // (with the gather through the mask and the error feedback fused into it).
  algo::TernaryInput input;
  input.src = SourceOf(comm, a);
  std::vector<float> scales;
  SIEVE_RETURN_IF_ERROR(AgreeOnScales(comm, a, input.src, elems, &scales));
  input.src.scales = scales.data();
  return RunCodec(comm, a, input, elems, chosen);
}

}  // namespace sieve::coll
