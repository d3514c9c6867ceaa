// How a subnet or D2FT all-reduce call runs: on host buffers, or on device
// buffers staged whole with only the ranges the call writes copied back.
#include "subnet/subnet_mode.h"

#include <algorithm>

#include "gpu/device_collectives.h"
#include "subnet/subnet_allreduce.h"
#include "ternary/residuals.h"

namespace sieve::subnet {

namespace {

// The call on host memory `buffers` (the caller's, or their staging).
Status RunOver(Comm& comm, const coll::Call& call, const coll::CollArgs& buffers) {
  const SubnetParams& p = call.Params<SubnetParams>();
  ExchangeArgs args;
  args.send = buffers.send;
  args.recv = buffers.recv;
  args.dtype = call.args.dtype;
  args.what = algo::OpKindName(call.kind);
  args.quant = p.quant;
  args.mask = p.mask.get();
  // One residual per buffer position, keyed by the layout as a mask keys ternary's: it
  // outlives the call's grouping, which D2FT changes with what is touched. Keyed by
  // the caller's sendbuff, not its staging (which another device buffer may reuse).
  if (p.error_feedback && p.quant.levels > 0)
    args.residual = ternary::HostResidualFor(comm, call.args.send, p.layout->count,
                                             static_cast<int>(call.args.dtype), p.layout.get(),
                                             p.layout->count);
  if (call.kind == algo::OpKind::kD2ftAllReduce)
    return AllReduceD2ft(comm, args, *p.layout, p.touched, p.schedule);
  return AllReduceSubnet(comm, args, *p.layout);
}

Status RunOnHost(Comm& comm, const coll::Call& call) { return RunOver(comm, call, call.args); }

// Device buffers: sendbuff staged whole, the host plan run on the staging, and
// only what the call writes copied back: the segments this rank holds (SDP),
// or those of them some rank touched (D2FT with a schedule). With gathered
// bitmaps what is touched is learnt on the progress thread, after the copies
// were enqueued: every held segment goes back, staged in from recvbuff first
// so an untouched one returns unchanged.
Status EnqueueOnDevice(Comm& comm, const coll::Call& call) {
  const SubnetParams& p = call.Params<SubnetParams>();
  const bool d2ft = call.kind == algo::OpKind::kD2ftAllReduce;
  const unsigned char* table = d2ft && !p.schedule.empty() ? p.schedule.data() : nullptr;
  std::vector<gpu::ElemRange> out = WrittenRanges(*p.layout, comm.rank(), comm.size(), table);
  std::vector<gpu::ElemRange> in;
  if (d2ft && table == nullptr) in = out;
  Comm* c = &comm;
  return gpu::EnqueueDevicePartial(
      comm, algo::OpKindName(call.kind), call.args, call.stream, in, out,
      [c, call](const coll::CollArgs& staged) { return RunOver(*c, call, staged); });
}

const coll::Mode kSubnet = {&RunOnHost, &EnqueueOnDevice, nullptr};

}  // namespace

std::vector<gpu::ElemRange> WrittenRanges(const LayoutState& layout, int rank, int nranks,
                                          const unsigned char* table) {
  const size_t row = (static_cast<size_t>(layout.num_segments()) + 7) / 8;
  std::vector<gpu::ElemRange> out;
  for (int k = 0; k < layout.num_segments(); ++k) {
    const std::vector<int>& h = layout.holders[static_cast<size_t>(k)];
    if (!std::binary_search(h.begin(), h.end(), rank)) continue;
    if (table != nullptr) {
      bool touched = false;
      for (int r = 0; r < nranks && !touched; ++r)
        touched = (table[static_cast<size_t>(r) * row + k / 8] >> (k % 8)) & 1u;
      if (!touched) continue;
    }
    const size_t begin = layout.offsets[static_cast<size_t>(k)];
    const size_t end = layout.offsets[static_cast<size_t>(k) + 1];
    if (!out.empty() && out.back().begin + out.back().count == begin)
      out.back().count += end - begin;  // adjacent: one copy
    else
      out.push_back({begin, end - begin});
  }
  return out;
}

const coll::Mode& SubnetMode() { return kSubnet; }

}  // namespace sieve::subnet
