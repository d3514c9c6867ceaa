// Ternary all-reduce: scales first (counted traffic, like any collective),
// then the same RunRing/RunTree as the dense all-reduce over integer partial
// sums, each range delivered as s_b * Q (or s_b * Q / n) rounded once to the
// output type on its last hop.
#include "ternary/ternary_allreduce.h"

#include <algorithm>
#include <chrono>
#include <memory>
#include <vector>

#include "algo/allreduce.h"
#include "algo/one_shot.h"
#include "algo/ring.h"
#include "algo/ring_pattern.h"
#include "coll/hier.h"
#include "core/log.h"
#include "plan/algo_choice.h"
#include "plan/link_probe.h"
#include "plan/link_rate.h"
#include "ternary/ternary_codec.h"
#include "ternary/ternary_scales.h"
#include "ternary/values_codec.h"

namespace sieve::coll {

namespace {

using Clock = std::chrono::steady_clock;

double MsSince(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

algo::OpFingerprint CallFingerprint(const TernaryArgs& a, algo::OpAlgo run) {
  algo::OpFingerprint fp = TernaryFingerprint(a);
  fp.algo = run;
  return fp;
}

// The codec's wire sizes (no buffers are touched through it).
algo::TernaryCodec SizesOnly(int n) {
  return algo::TernaryCodec(algo::TernaryInput{}, algo::TernaryOutput{}, nullptr, n);
}

// Where the scales go with the data (plan::ScalesInOneExchange: their copies to
// every rank stay small); else the dense all-reduce-max runs first, on its own.
bool ScalesWithTheData(const Comm& comm, size_t elems, size_t block) {
  const size_t nblocks = (elems + block - 1) / block;
  return plan::ScalesInOneExchange(comm.size(), nblocks * sizeof(float), plan::LinkOf(comm));
}

}  // namespace

size_t SegmentWireBytes(const Comm& comm, const algo::Codec& codec, kernels::DType dtype) {
  const size_t elems = std::max<size_t>(1, comm.config().segment_bytes / kernels::DTypeSize(dtype));
  return codec.WireBytes(elems, comm.size());
}

// One flat call on more than one rank: its channel (the fingerprint goes out
// as it is made) and the ring, tree or direct exchange on it; with
// `pipelined_scales`, the scale agreement too (ternary_scales.h), so the call
// has one fingerprint and one verdict exchange.
struct TernaryCall {
  TernaryCall(Comm& comm, const TernaryArgs& a, size_t elems, plan::Algo chosen,
              bool pipelined_scales)
      : elems(elems),
        run(plan::FlatRun(comm, chosen, SegmentWireBytes(comm, SizesOnly(comm.size()),
                                                          a.base.dtype))),
        seq(comm.NextSeq()),
        ch(comm.MakeChannel(CallFingerprint(a, run.algo), seq)) {
    // A view's operation is a step of its communicator's collective (counted there).
    if (!comm.is_view()) ++comm.stats().collectives;
    if (!pipelined_scales) return;
    const int n = comm.size();
    // The pieces follow the ring's segments, or the one-shot's (one range cut
    // as algo::OneShotSegments cuts it), so the first codes go out when the
    // first piece is agreed; the tree and the direct exchange take every scale
    // before their first range.
    size_t segments = 1;
    std::vector<size_t> bounds = algo::BalancedSplit(elems, n);
    if (run.algo == algo::OpAlgo::kRing) {
      algo::RingOptions options;
      options.segment_bytes = run.segment_bytes;
      options.inflight_bytes = run.inflight_bytes;
      segments = algo::RingSegments(SizesOnly(n), bounds, n, options);
    } else if (run.algo == algo::OpAlgo::kOneShot) {
      segments = algo::OneShotSegments(SizesOnly(n), elems, run.segment_bytes).size() - 1;
      bounds = {0, elems};
    }
    scale_values.assign((elems + a.block - 1) / a.block, 0.0f);
    scales = std::make_unique<algo::TernaryScales>(
        ch, algo::CutScalePieces(elems, a.block, bounds, segments), scale_values.data());
    // This rank's proposed rate bound goes out with the scales; after the call's
    // verdict every rank adopts the agreed one (LearnRate).
    scales->CarryProposal(static_cast<float>(comm.State<plan::LinkRate>().proposal()));
    if (comm.FirstUse("ternary scales", scale_values.size() * sizeof(float)))
      SIEVE_INFO(kLogColl,
                 "ternary scales (%zu blocks) on %d ranks: to every rank in %zu pieces on the "
                 "call's channel, pipelined with its %s",
                 scale_values.size(), n, segments, algo::OpAlgoName(run.algo));
  }

  size_t elems;
  algo::AllReduceRun run;
  uint32_t seq;
  algo::Channel ch;
  std::vector<float> scale_values;
  std::unique_ptr<algo::TernaryScales> scales;  // null: agreed before the call
};

namespace {

// Where SIEVE_LINK_RATE is unset, the call feeds the communicator's one rate learner
// (plan/link_rate.h): after its verdict says every rank succeeded, every rank adopts the
// bound agreed from the `proposals` the ranks sent with its scales or its values (the
// same list everywhere, so the same choice next time; null: none travelled), and offers
// the bound this call proves for the next call's.
void LearnRate(Comm& comm, const TernaryCall& call, const std::vector<float>* proposals,
               uint64_t sent, double data_s) {
  if (comm.config().link_rate > 0) return;
  plan::LinkRate& learned = comm.State<plan::LinkRate>();
  if (proposals != nullptr) learned.Agreed(plan::AgreedBound(*proposals));
  plan::RateSample sample;
  sample.algo = call.run.algo;
  sample.nranks = comm.size();
  sample.segment_bytes = call.run.segment_bytes;
  sample.one_kind_of_link = comm.hosts().nhosts == 1 || comm.hosts().nhosts == comm.size();
  // The scales went to every peer, not only along the ring (up to a few % of its bytes).
  const uint64_t scale_bytes =
      call.scales != nullptr ? call.scale_values.size() * sizeof(float) * (comm.size() - 1) : 0;
  sample.sent = sent > scale_bytes ? sent - scale_bytes : 0;
  sample.seconds = data_s;
  sample.scales_first = call.scales != nullptr;
  sample.one_way_s = comm.link_rtt_s() / 2;
  const double bound = plan::RateBoundOf(sample);
  learned.Offer(bound);
  SIEVE_TRACE(kLogColl, "ternary #%u: rate learned %.3g Gbit/s, measured here %.3g", call.seq,
              learned.rate() * 8e-9, bound * 8e-9);
}

// The ring, tree, direct exchange or one-shot on the call's channel, then its one verdict
// exchange; `proposals`: the rate proposals the call carries (read once it is done).
Status Exchange(Comm& comm, TernaryCall& call, algo::Codec& codec,
                const std::vector<float>* proposals) {
  const Clock::time_point start = Clock::now();
  const uint64_t sent0 = comm.stats().traffic.sent;
  const double waited0 = call.scales != nullptr ? call.scales->waited_s() : 0.0;
  Status data = algo::RunAllReduce(call.ch, codec, call.elems, call.run);
  if (data.ok()) data = codec.status();
  if (data.ok() && call.scales != nullptr) data = call.scales->Finish();  // our scale sends
  const double data_ms = MsSince(start);
  const uint64_t sent = comm.stats().traffic.sent - sent0;
  const double waited = call.scales != nullptr ? call.scales->waited_s() - waited0 : 0.0;
  comm.stats().peer_wait_s += waited;
  const Clock::time_point concluding = Clock::now();
  Status st = call.ch.Conclude(data);
  SIEVE_TRACE(kLogColl,
              "ternary #%u: %s of %zu segment bytes %.2f ms (%.2f ms of it waiting "
              "for scales, %llu bytes sent), agreement %.2f ms",
              call.seq, algo::OpAlgoName(call.run.algo), call.run.segment_bytes, data_ms,
              waited * 1e3, static_cast<unsigned long long>(sent), MsSince(concluding));
  if (st.ok()) LearnRate(comm, call, proposals, sent, data_ms * 1e-3);
  return st;
}

}  // namespace

kernels::TernarySource TernarySourceOf(Comm& comm, const TernaryArgs& a) {
  kernels::TernarySource src;
  src.dtype = a.base.dtype;
  src.data = a.base.send;
  src.idx = a.mask_idx;
  src.bits = a.mask_bits;  // the kernels compress runs of the bitmap rather than gather
  if (a.mask_send_packed) src.idx = nullptr, src.bits = nullptr;
  src.residual = a.residual;
  src.block = a.block;
  src.levels = a.levels;
  src.rng = kernels::PhiloxStream{
      a.seed, static_cast<uint32_t>(a.rng_rank >= 0 ? a.rng_rank : comm.rank()), a.step};
  return src;
}

namespace {

// The call's exchange over `elems` quantized elements of `input`, each
// range delivered into a.base.recv (scattered through the mask, if any); or,
// with `sums_wire`, the final sums packed there in TernaryBits(n * L) bits instead.
// The one-shot of values (call->run) agrees on the scales itself, from the values.
Status RunCodec(Comm& comm, const TernaryArgs& a, const algo::TernaryInput& agreed_input,
                size_t elems, TernaryCall* call, void* sums_wire = nullptr) {
  const CollArgs& b = a.base;
  const int n = comm.size();
  const bool values = call != nullptr && call->run.algo == algo::OpAlgo::kOneShotValues;
  algo::TernaryInput input = agreed_input;
  std::vector<float> scales;  // the one-shot of values' own, once the values are in
  if (values) {
    scales.assign((elems + a.block - 1) / a.block, 0.0f);
    input.src.scales = scales.data();
  }
  algo::TernaryOutput output;
  output.data = sums_wire != nullptr ? nullptr : b.recv;
  output.divisor = a.levels * (b.op == kernels::RedOp::kAvg ? (a.divisor > 0 ? a.divisor : n) : 1);
  output.stores =
      algo::OutputStoresFor(b.count * kernels::DTypeSize(b.dtype), comm.config().stream_bytes);
  if (a.mask_idx != nullptr) {
    output.bits = a.mask_bits;
    output.idx = a.mask_idx;
    output.nnz = a.mask_nnz;
    output.count = b.count;
  }
  const kernels::TernaryWork wt = kernels::TernaryWorkFor(n, a.levels);
  // Not zero-filled (a 4-rank 16 MiB ternary call zero-filled 4 MiB): the codec writes
  // every range's work before it reads it (LoadInput, the first ReduceInto and
  // Decode write; later receives add). Allocated per call on purpose: a buffer held
  // across calls kept glibc from raising its mmap threshold, and the call's other
  // large buffers then faulted their pages on every call (~2000 faults per call).
  std::unique_ptr<char[]> work(new char[elems * static_cast<size_t>(wt)]);
  algo::TernaryCodec codec(input, output, work.get(), n);
  if (n == 1) {
    codec.LoadInput(0, elems);
    codec.Deliver(0, elems);
  } else if (values) {
    algo::TernaryValuesCodec values_codec(
        codec, input.src, elems, scales.data(), comm.rank(), n,
        static_cast<float>(comm.State<plan::LinkRate>().proposal()));
    SIEVE_RETURN_IF_ERROR(Exchange(comm, *call, values_codec, &values_codec.proposals()));
  } else {
    SIEVE_RETURN_IF_ERROR(Exchange(comm, *call, codec,
                                   call->scales != nullptr ? &call->scales->proposals() : nullptr));
  }
  // Work keeps every range's final sums after the exchange (algo/codec.h).
  if (sums_wire != nullptr)
    kernels::TernaryPack(wt, work.get(), elems, kernels::TernaryBits(n * a.levels), sums_wire);
  return Status::OK();
}

// Slices cut at block boundaries so every block has one scale, as on a flat run.
Status HierTernary(Comm& comm, const TernaryArgs& a) {
  const int root_rank = comm.rank(), n = comm.size();
  return HierAllReduce(comm, a.base, TernaryFingerprint(a),
                       HierBounds(a.base.count, comm.hosts().max_local, a.block),
                       [&](Comm& cross, void* slice, size_t, size_t count) -> Status {
                         TernaryArgs s = a;
                         s.base.send = slice;
                         s.base.recv = slice;
                         s.base.count = count;
                         s.rng_rank = root_rank;
                         s.divisor = n;
                         s.local_scales = nullptr;  // the slices have blocks of their own
                         return TernaryAllReduce(cross, s);
                       });
}

}  // namespace

algo::OpFingerprint TernaryFingerprint(const TernaryArgs& a) {
  algo::OpFingerprint fp;
  fp.kind = algo::OpKind::kTernaryAllReduce;
  fp.count = a.mask_idx != nullptr ? a.mask_nnz : a.base.count;  // the elements quantized
  fp.dtype = static_cast<uint8_t>(a.base.dtype);
  fp.op = static_cast<uint8_t>(a.base.op);
  // Seed, step, block and levels must agree, or the ranks' codes do not add up.
  fp.mode = algo::TernaryMode(a.seed, a.step, a.block, a.levels);
  if (a.mask_digest != 0) fp.mode = algo::WithMaskDigest(fp.mode, a.mask_digest);
  return fp;
}

namespace {

// The flat plan (`chosen`) of `elems` quantized elements; null on one rank.
std::shared_ptr<TernaryCall> OpenCall(Comm& comm, const TernaryArgs& a, size_t elems,
                                      plan::Algo chosen, bool pipelined_scales) {
  if (comm.size() == 1) return nullptr;
  return std::make_shared<TernaryCall>(comm, a, elems, chosen, pipelined_scales);
}

// The scales as a dense all-reduce-max of their own, before the call. A NaN
// scale (non-finite input) must win the max on every rank whatever the order
// of the hops, which the dense max (a > b ? a : b) does not promise for NaN:
// it travels as +infinity, which no finite scale exceeds, and comes back.
Status AllReduceScalesMax(Comm& comm, const TernaryArgs& a, float* scales, size_t nblocks) {
  const algo::OpFingerprint call = TernaryFingerprint(a);
  const float inf = std::numeric_limits<float>::infinity();
  for (size_t b = 0; b < nblocks; ++b)
    if (!(scales[b] < inf)) scales[b] = inf;  // NaN or +infinity
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

}  // namespace

Status TernaryAgreeScales(Comm& comm, const TernaryArgs& a, float* scales, size_t nblocks,
                          std::shared_ptr<TernaryCall>* call) {
  const plan::Algo chosen =
      plan::ChooseTernaryAllReduce(comm, a.base.count, "codes quantized on the device",
                                   a.levels)
          .algo;
  if (comm.size() == 1) return Status::OK();
  const bool pipelined = ScalesWithTheData(comm, a.base.count, a.block);
  if (!pipelined) SIEVE_RETURN_IF_ERROR(AllReduceScalesMax(comm, a, scales, nblocks));
  *call = OpenCall(comm, a, a.base.count, chosen, pipelined);
  if (!pipelined) return Status::OK();
  TernaryCall& c = **call;
  if (nblocks != c.scale_values.size())
    return c.ch.Conclude(Status::Internal(StrFormat(
        "ternary scales: %zu blocks where %zu were expected", nblocks, c.scale_values.size())));
  std::copy(scales, scales + nblocks, c.scale_values.begin());
  Status st = c.scales->StartComputed();
  if (st.ok()) st = c.scales->Finish();
  if (!st.ok()) return c.ch.Conclude(st);  // no exchange follows: every peer hears it failed
  std::copy(c.scale_values.begin(), c.scale_values.end(), scales);
  return Status::OK();
}

Status TernaryAllReduceQuantized(Comm& comm, const TernaryArgs& a, TernaryCall* call,
                                 const float* scales, const void* wire, void* sums_wire) {
  algo::TernaryInput input;
  input.src = TernarySourceOf(comm, a);
  input.src.scales = scales;
  input.quantized = wire;  // the codec reads the codes (TernaryBits(L) bits) range by range
  if (comm.size() > 1 && call == nullptr)
    return Status::Internal("ternary allreduce: the scales were not agreed");
  return RunCodec(comm, a, input, a.base.count, call, sums_wire);
}

Status TernaryAllReduce(Comm& comm, const TernaryArgs& a) {
  const bool masked = a.mask_idx != nullptr;
  const size_t elems = masked ? a.mask_nnz : a.base.count;  // elements quantized
  // The one-shot of values quantizes every rank's values with the stream of the rank
  // that sent them: only on a communicator's own ranks, delivering into a buffer.
  const bool values_allowed = comm.size() > 1 && !comm.is_view() && a.rng_rank < 0 &&
                              elems > 0 && a.base.recv != nullptr;
  const plan::Algo chosen =
      plan::ChooseTernaryAllReduce(comm, elems,
                                   a.residual != nullptr ? "error feedback"
                                   : masked              ? "a mask the codec gathers"
                                                         : nullptr,
                                   a.levels, values_allowed)
          .algo;
  // These two plans read every element before any scale goes out: the caller's
  // gather, if any, finishes first.
  if (a.local_scales != nullptr &&
      (chosen == plan::Algo::kHier || chosen == plan::Algo::kOneShotValues))
    a.local_scales->Through(elems);
  if (chosen == plan::Algo::kHier) return HierTernary(comm, a);
  if (chosen == plan::Algo::kOneShotValues) {
    algo::TernaryInput input;
    input.src = TernarySourceOf(comm, a);
    std::shared_ptr<TernaryCall> call = OpenCall(comm, a, elems, chosen, /*pipelined=*/false);
    return RunCodec(comm, a, input, elems, call.get());
  }
  // Two passes over the input: the abs-max, then the codec's quantization
  // (with the gather through the mask and the error feedback fused into it).
  // With the scales pipelined, the abs-max goes out piece by piece and the
  // ring starts on the first pieces agreed (ternary_scales.h).
  algo::TernaryInput input;
  input.src = TernarySourceOf(comm, a);
  const bool pipelined = comm.size() > 1 && ScalesWithTheData(comm, elems, a.block);
  std::vector<float> local;
  const Clock::time_point start = Clock::now();
  if (!pipelined) {
    local.assign((elems + a.block - 1) / a.block, 0.0f);
    if (a.local_scales != nullptr) {
      const float* made = a.local_scales->Through(elems);
      std::copy(made, made + local.size(), local.begin());
    } else {
      kernels::TernaryAbsMax(input.src, elems, local.data());
    }
    input.src.scales = local.data();
    if (comm.size() > 1) {
      const Clock::time_point agreeing = Clock::now();
      SIEVE_RETURN_IF_ERROR(AllReduceScalesMax(comm, a, local.data(), local.size()));
      comm.stats().peer_wait_s += MsSince(agreeing) * 1e-3;
    }
  }
  std::shared_ptr<TernaryCall> call = OpenCall(comm, a, elems, chosen, pipelined);
  if (pipelined) {
    Status st;
    if (a.local_scales != nullptr) {
      st = call->scales->StartComputed(*a.local_scales);
    } else {
      st = call->scales->Start(input.src);
    }
    if (!st.ok()) return call->ch.Conclude(st);
    input.src.scales = call->scale_values.data();
    input.pending_scales = call->scales.get();
  }
  SIEVE_TRACE(kLogColl, "ternary scales: abs-max of %zu blocks%s, %.2f ms",
              (elems + a.block - 1) / a.block,
              pipelined ? ", sent in pieces" : " and their all-reduce-max", MsSince(start));
  Status st = RunCodec(comm, a, input, elems, call.get());
  SIEVE_TRACE(kLogColl, "ternary: %.2f ms in all", MsSince(start));
  return st;
}

}  // namespace sieve::coll
