// Direct collectives: a handshake-only operation whose progress-thread part
// runs the host plan on device pointers in the caller's context.
#include "gpu/direct_collectives.h"

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "algo/ring.h"
#include "algo/ring_pattern.h"
#include "algo/tree.h"
#include "gpu/comm_engine.h"
#include "gpu/device_dense_codec.h"
#include "gpu/device_scratch.h"
#include "gpu/gpu_runtime.h"
#include "plan/algo_choice.h"

namespace sieve::gpu {

namespace {

// Ends the reservation when the last copy of the progress-thread part goes
// (it ran, was skipped, or was never queued).
struct ScratchTicket {
  DeviceScratch* scratch;
  ~ScratchTicket() { scratch->Done(); }
};

size_t CeilDiv(size_t a, size_t b) { return (a + b - 1) / b; }

// The ring's receive scratch (algo/ring.cc with the device codec: only the
// reduce-scatter steps receive into scratch): one buffer per segment in
// flight, each of the largest segment.
void RingScratch(const std::vector<size_t>& bounds, size_t es, size_t segment_bytes,
                 std::vector<size_t>* requests) {
  size_t max_len = 0;
  for (size_t c = 0; c + 1 < bounds.size(); ++c)
    max_len = std::max(max_len, bounds[c + 1] - bounds[c]);
  const size_t segments = std::max<size_t>(1, CeilDiv(max_len * es, segment_bytes));
  const size_t window =
      std::max<size_t>(2, algo::RingOptions{}.inflight_bytes / segment_bytes);
  for (size_t i = 0; i < std::min(window, segments); ++i)
    requests->push_back(CeilDiv(max_len, segments) * es);
}

// Every scratch request the plan of `kind` makes on this rank with the
// device codec (wire bytes = elements x size; no send scratch; receives
// straight into the work buffer where the algorithm allows), as
// coll/collectives.cc and algo/{ring,tree,chain}.cc make them. A request
// missing here fails the collective with an error naming it (DeviceScratch).
std::vector<size_t> ScratchPlan(Comm& comm, CollKind kind, const coll::CollArgs& args) {
  const size_t es = kernels::DTypeSize(args.dtype), bytes = args.count * es;
  const int n = comm.size(), rank = comm.rank();
  const size_t seg = comm.config().segment_bytes;
  const size_t whole_segments = std::max<size_t>(1, CeilDiv(bytes, seg));
  std::vector<size_t> requests;
  switch (kind) {
    case CollKind::kBroadcast:
    case CollKind::kAllGather:
      break;  // received in place
    case CollKind::kReduce:
      if (rank != args.root) requests.push_back(bytes);  // the partials
      if (n > 1 && algo::Mod(rank - args.root - 1, n) > 0)
        requests.push_back(bytes + whole_segments);  // the chain's receive
      break;
    case CollKind::kReduceScatter:
      requests.push_back(bytes * static_cast<size_t>(n));  // the full work buffer
      if (n > 1) RingScratch(algo::EqualBlocks(args.count, n), es, seg, &requests);
      break;
    default:  // the flat all-reduce: whichever algorithm it may take when it runs
      if (n == 1) break;
      for (plan::Algo chosen : plan::DenseFlatCandidates(comm, bytes)) {
        if (chosen == plan::Algo::kTree) {
          for (size_t c = 0; c < algo::TreeChildren(rank, n).size(); ++c)
            requests.push_back(bytes + whole_segments);  // each child's receive
        } else if (chosen == plan::Algo::kOneShot) {
          requests.insert(requests.end(), n, bytes);  // every rank's image, ours included
        } else {
          RingScratch(algo::BalancedSplit(args.count, n), es, seg, &requests);
        }
      }
      break;
  }
  return requests;
}

// On the progress thread (the engine's context is current there): the host
// plan with device memory, on the stream and scratch prepared at enqueue.
Status RunDirect(Comm& comm, CollKind kind, const coll::CollArgs& args, DeviceOps* ops,
                 EngineStreams* streams, cu::Context ctx) {
  cu::Stream stream = nullptr;
  DeviceScratch* scratch = nullptr;
  SIEVE_RETURN_IF_ERROR(streams->Lookup(ctx, &stream, &scratch));
  coll::DenseMemory device;
  // Complete before the bytes are sent on (or the call ends).
  device.copy = [ops, stream](void* dst, const void* src, size_t bytes) {
    if (dst == src || bytes == 0) return Status::OK();
    SIEVE_RETURN_IF_ERROR(ops->CopyDevice(dst, src, bytes, stream));
    return ops->Synchronize(stream);
  };
  device.scratch = scratch;
  device.type = transport::MemoryType::kDevice;
  device.codec = [ops, stream, scratch](const void* input, void* work,
                                        const coll::CollArgs& a, int nranks) {
    return std::unique_ptr<algo::Codec>(
        new DeviceDenseCodec(ops, stream, scratch, input, work, a.dtype, a.op, nranks));
  };
  Status st;
  switch (kind) {
    case CollKind::kBroadcast: st = coll::BroadcastWith(comm, args, device); break;
    case CollKind::kReduce: st = coll::ReduceWith(comm, args, device); break;
    case CollKind::kAllGather: st = coll::AllGatherWith(comm, args, device); break;
    case CollKind::kReduceScatter: st = coll::ReduceScatterWith(comm, args, device); break;
    default: st = coll::FlatAllReduceWith(comm, args, device); break;
  }
  if (st.ok()) comm.LogTransportOnce();
  return st;
}

}  // namespace

Status EnqueueDirect(Comm& comm, CollKind kind, const coll::CollArgs& args, cu::Stream stream) {
  ProgressEngine* engine = nullptr;
  SIEVE_RETURN_IF_ERROR(EngineFor(comm, {args.send, args.recv}, &engine));
  DeviceOps* ops = Runtime().ops;
  // The device work runs in the communicator's context (its buffers' one).
  const cu::Context ctx = engine->context();
  // Everything that may synchronize the device happens here, before the
  // caller's stream is parked: the engine's stream and the plan's scratch.
  cu::Stream engine_stream = nullptr;
  DeviceScratch* scratch = nullptr;
  SIEVE_RETURN_IF_ERROR(engine->streams().Prepare(ctx, &engine_stream, &scratch));
  SIEVE_RETURN_IF_ERROR(scratch->Reserve(ScratchPlan(comm, kind, args)));
  StagedOp op;
  op.name = CollKindName(kind);
  op.stream = stream;
  op.depth = 1;
  StagedChunk chunk;  // no bytes, no copies: only the handshake
  Comm* cm = &comm;
  EngineStreams* streams = &engine->streams();
  std::shared_ptr<ScratchTicket> ticket(new ScratchTicket{scratch});
  chunk.run = [cm, kind, args, ops, streams, ctx, ticket](char*) {
    return RunDirect(*cm, kind, args, ops, streams, ctx);
  };
  op.chunks.push_back(std::move(chunk));
  return engine->Enqueue(std::move(op));
}

}  // namespace sieve::gpu
