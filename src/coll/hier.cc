// Hierarchical all-reduce over the host and cross views of a communicator,
// reusing the ring (reduce-scatter only / all-gather only) and the dense codec.
#include "coll/hier.h"

#include "algo/dense_codec.h"
#include "algo/ring.h"
#include "algo/ring_pattern.h"
#include "core/log.h"
#include "kernels/reduce.h"
#include "topo/host_id.h"

namespace sieve::coll {

Status LearnHosts(Comm& comm) {
  // The host identities came with the bootstrap's address exchange (the host
  // part of each rank's host_id): no traffic here.
  const int n = comm.size();
  std::string identity = topo::HostIdentity(comm.config().host_id);
  std::vector<uint64_t> ids = comm.bootstrap_host_ids();
  if (static_cast<int>(ids.size()) != n)
    return Status::Internal(StrFormat("host identities of %zu ranks for %d", ids.size(), n));
  comm.SetHosts(HostLayout::FromIds(ids));
  const HostLayout& l = comm.hosts();
  SIEVE_INFO(kLogInit, "host %s: host %d, local rank %d; %d ranks on %s%s", identity.c_str(),
             l.host[comm.rank()], l.local[comm.rank()], n, l.Describe().c_str(),
             l.Hierarchical()
                 ? "; all-reduce hierarchical unless SIEVE_ALGO=FLAT|RING|TREE"
                 : (l.nhosts > 1 && l.max_local > 1 ? "; uneven hosts: flat all-reduce" : ""));
  return Status::OK();
}

std::vector<size_t> HierBounds(size_t count, int parts, size_t align) {
  std::vector<size_t> bounds = algo::BalancedSplit((count + align - 1) / align, parts);
  for (size_t& b : bounds) b = std::min(count, b * align);
  return bounds;
}

namespace {

// The three steps; `agreed` carries the call's fingerprints (HierAllReduce).
Status HierSteps(Comm& comm, const CollArgs& a, algo::Channel& agreed,
                 const std::vector<size_t>& bounds, const InterStep& inter) {
  Comm& host = *comm.host_view();
  Comm& cross = *comm.cross_view();
  const int local = host.rank(), nlocal = host.size();
  const size_t esize = kernels::DTypeSize(a.dtype);
  // Inside the host every step is plain: sum for avg, divided once after the inter step.
  kernels::RedOp op = a.op == kernels::RedOp::kAvg ? kernels::RedOp::kSum : a.op;
  algo::RingOptions options;
  options.segment_bytes = comm.config().segment_bytes;
  // One channel for both host steps: its per-peer message indices keep them apart.
  // Its waits end on a fingerprint that differs (a host peer's count, say).
  algo::Channel ch = host.MakeChannel("hier allreduce (host)", comm.NextSeq());
  ch.Watch(&agreed);

  // 1. Reduce-scatter inside the host: local rank i ends with slice i of the host's combination.
  algo::DenseCodec reduce(a.send, a.recv, a.dtype, op, nlocal);
  options.all_gather = false;
  SIEVE_RETURN_IF_ERROR(algo::RunRing(ch, reduce, bounds, options).WithContext("host reduce"));

  // Every rank called the same collective (the cross step compares only its own slice
  // with the same local rank of the other hosts; a mask's digest, say, would pass it).
  SIEVE_RETURN_IF_ERROR(agreed.AwaitFingerprints());

  // 2. Across hosts, among the ranks with our local index.
  char* slice = static_cast<char*>(a.recv) + bounds[local] * esize;
  size_t len = bounds[local + 1] - bounds[local];
  // Even an empty slice runs it: every rank must draw the same sequence numbers.
  SIEVE_RETURN_IF_ERROR(inter(cross, slice, bounds[local], len));

  // 3. All-gather inside the host.
  algo::DenseCodec gather(a.recv, a.recv, a.dtype, op, nlocal);
  options.all_gather = true;
  options.reduce_scatter = false;
  return algo::RunRing(ch, gather, bounds, options).WithContext("host gather");
}

}  // namespace

Status HierAllReduce(Comm& comm, const CollArgs& a, algo::OpFingerprint call,
                     const std::vector<size_t>& bounds, const InterStep& inter) {
  call.algo = algo::OpAlgo::kHier;
  algo::Channel agreed = comm.MakeChannel(call, comm.NextSeq());
  return agreed.Conclude(HierSteps(comm, a, agreed, bounds, inter));
}

algo::OpFingerprint DenseAllReduceFingerprint(const CollArgs& a) {
  algo::OpFingerprint fp;
  fp.kind = algo::OpKind::kAllReduce;
  fp.count = a.count;
  fp.dtype = static_cast<uint8_t>(a.dtype);
  fp.op = static_cast<uint8_t>(a.op);
  return fp;
}

Status HierDenseAllReduce(Comm& comm, const CollArgs& a, const algo::OpFingerprint& call) {
  const int n = comm.size();
  return HierAllReduce(comm, a, call, HierBounds(a.count, comm.hosts().max_local, 1),
                       [&](Comm& cross, void* slice, size_t, size_t count) -> Status {
                         CollArgs s = a;
                         s.send = slice;
                         s.recv = slice;
                         s.count = count;
                         s.call = nullptr;  // the slice's own fingerprint
                         if (a.op == kernels::RedOp::kAvg) s.op = kernels::RedOp::kSum;
                         SIEVE_RETURN_IF_ERROR(FlatAllReduce(cross, s));
                         if (a.op == kernels::RedOp::kAvg)
                           kernels::DivideBy(a.dtype, slice, count, n);
                         return Status::OK();
                       });
}

}  // namespace sieve::coll
