// Direct collectives: a handshake-only operation whose progress-thread part
// runs the host plan on device pointers in the caller's context.
#include "gpu/direct_collectives.h"

#include <memory>
#include <string>

#include "gpu/comm_engine.h"
#include "gpu/device_dense_codec.h"
#include "gpu/device_scratch.h"
#include "gpu/gpu_runtime.h"

namespace sieve::gpu {

namespace {

// On the progress thread, with the caller's context current.
Status RunInContext(Comm& comm, CollKind kind, const coll::CollArgs& args, DeviceOps* ops,
                    EngineStreams* streams, cu::Context ctx) {
  cu::Stream stream = nullptr;
  SIEVE_RETURN_IF_ERROR(streams->For(ctx, &stream));
  DeviceScratch& scratch = *streams->ScratchOf(ctx);  // created with the stream
  coll::DenseMemory device;
  // Complete before the bytes are sent on (or the call ends).
  device.copy = [ops, stream](void* dst, const void* src, size_t bytes) {
    if (dst == src || bytes == 0) return Status::OK();
    SIEVE_RETURN_IF_ERROR(ops->CopyDevice(dst, src, bytes, stream));
    return ops->Synchronize(stream);
  };
  device.scratch = &scratch;
  device.codec = [ops, stream, &scratch](const void* input, void* work,
                                         const coll::CollArgs& a, int nranks) {
    return std::unique_ptr<algo::Codec>(
        new DeviceDenseCodec(ops, stream, &scratch, input, work, a.dtype, a.op, nranks));
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

Status RunDirect(Comm& comm, CollKind kind, const coll::CollArgs& args, DeviceOps* ops,
                 EngineStreams* streams, cu::Context ctx) {
  SIEVE_RETURN_IF_ERROR(ops->PushContext(ctx));
  Status st = RunInContext(comm, kind, args, ops, streams, ctx);
  Status popped = ops->PopContext();
  return st.ok() ? popped : st;
}

}  // namespace

Status EnqueueDirect(Comm& comm, CollKind kind, const coll::CollArgs& args, cu::Stream stream) {
  ProgressEngine* engine = nullptr;
  SIEVE_RETURN_IF_ERROR(EngineFor(comm, &engine));
  DeviceOps* ops = Runtime().ops;
  // The device work runs in the caller's context (the one its buffers belong to).
  cu::Context ctx = nullptr;
  SIEVE_RETURN_IF_ERROR(ops->CurrentContext(&ctx));
  StagedOp op;
  op.name = CollKindName(kind);
  op.stream = stream;
  op.depth = 1;
  StagedChunk chunk;  // no bytes, no copies: only the handshake
  Comm* cm = &comm;
  EngineStreams* streams = &engine->streams();
  chunk.run = [cm, kind, args, ops, streams, ctx](char*) {
    return RunDirect(*cm, kind, args, ops, streams, ctx);
  };
  op.chunks.push_back(std::move(chunk));
  return engine->Enqueue(std::move(op));
}

}  // namespace sieve::gpu
