// Staged send/receive: every op of the group gets its own region of one slot.
#include "gpu/device_p2p.h"

#include "gpu/comm_engine.h"

namespace sieve::gpu {

Status EnqueueDeviceP2p(Comm& comm, const std::vector<P2pOp>& ops) {
  ProgressEngine* engine = nullptr;
  SIEVE_RETURN_IF_ERROR(EngineFor(comm, {}, &engine));
  StagedOp op;
  op.name = "send/recv";
  op.depth = 1;
  StagedChunk chunk;
  std::vector<P2pOp> staged;  // the ops with their buffers' offsets in the slot
  bool first = true;
  for (const P2pOp& p : ops) {
    if (p.comm != &comm) continue;
    if (first) op.stream = p.stream;
    if (p.stream != op.stream)
      return Status::InvalidUsage(
          "send/recv on device buffers in one group must use one stream per communicator");
    first = false;
    SIEVE_RETURN_IF_ERROR(EngineFor(comm, {p.buffer}, &engine));
    size_t offset = (chunk.bytes + 255) & ~size_t{255};
    StagedCopy copy{offset, p.buffer, p.bytes};
    (p.is_send ? chunk.in : chunk.out).push_back(copy);
    P2pOp s = p;
    s.enqueue_on_device = nullptr;  // staged: host memory from here on
    s.buffer = reinterpret_cast<void*>(offset);  // rebased on the slot in `run`
    staged.push_back(s);
    chunk.bytes = offset + p.bytes;
  }
  Comm* c = &comm;
  chunk.run = [c, staged](char* staging) {
    std::vector<P2pOp> now = staged;
    for (P2pOp& p : now) p.buffer = staging + reinterpret_cast<size_t>(p.buffer);
    return RunHostP2p(c, now);
  };
  op.chunks.push_back(std::move(chunk));
  return engine->Enqueue(std::move(op));
}

}  // namespace sieve::gpu
