// Staged plans of the collectives on device buffers.
//
// Elementwise collectives (all-reduce, broadcast, reduce) cut the buffer into
// chunks of SIEVE_GPU_CHUNK_BYTES; chunk c is staged, run in place by the host
// algorithm and copied back. All-gather and reduce-scatter cut each rank's
// block the same way: chunk c holds elements [off, off+len) of every block.
// Whole-buffer all-reduces (mask tracker, ternary, masked) are one chunk whose
// staging address stays the same for the same device buffer; so are the
// whole-buffer reduce-scatter and all-gather (the quantized ones). The plain dense
// collectives go direct instead where plan::ChooseDenseOnDevice says so
// (gpu/direct_collectives.h).
#include "gpu/device_collectives.h"

#include <algorithm>

#include "gpu/comm_engine.h"
#include "gpu/gpu_runtime.h"
#include "gpu/stream_plan.h"

namespace sieve::gpu {

namespace {

using coll::CollArgs;

char* At(const void* base, size_t bytes) {
  return static_cast<char*>(const_cast<void*>(base)) + bytes;
}

// One chunk of an elementwise collective: [off, off+len) elements, staged at 0.
StagedChunk Elementwise(const CollArgs& a, CollKind kind, int rank, size_t off, size_t len,
                        const HostCollective& host) {
  size_t es = kernels::DTypeSize(a.dtype);
  StagedChunk c;
  c.bytes = len * es;
  bool copy_in = kind != CollKind::kBroadcast || rank == a.root;
  bool copy_out = kind != CollKind::kReduce || rank == a.root;
  if (copy_in) c.in.push_back({0, At(a.send, off * es), len * es});
  if (copy_out) c.out.push_back({0, At(a.recv, off * es), len * es});
  CollArgs staged = a;
  staged.count = len;
  c.run = [staged, host](char* staging) {
    CollArgs s = staged;
    s.send = staging;
    s.recv = staging;  // in place
    return host(s);
  };
  return c;
}

// One chunk of an all-gather / reduce-scatter: element range [off, off+len)
// of each of the n blocks, staged as n consecutive blocks of len.
StagedChunk Blocked(const CollArgs& a, CollKind kind, int rank, int n, size_t off, size_t len,
                    const HostCollective& host) {
  if (kind == CollKind::kAllGatherWhole) kind = CollKind::kAllGather;
  size_t es = kernels::DTypeSize(a.dtype), block = len * es;
  StagedChunk c;
  c.bytes = block * static_cast<size_t>(n);
  size_t own = static_cast<size_t>(rank) * block;
  for (int r = 0; r < n; ++r) {
    size_t staged_at = static_cast<size_t>(r) * block;
    size_t user_at = (static_cast<size_t>(r) * a.count + off) * es;
    if (kind == CollKind::kAllGather)
      c.out.push_back({staged_at, At(a.recv, user_at), block});
    else
      c.in.push_back({staged_at, At(a.send, user_at), block});
  }
  if (kind == CollKind::kAllGather)
    c.in.push_back({own, At(a.send, off * es), block});
  else
    c.out.push_back({own, At(a.recv, off * es), block});
  CollArgs staged = a;
  staged.count = len;
  c.run = [staged, host, own, kind](char* staging) {
    CollArgs s = staged;
    // NCCL's in-place forms: our block inside the full buffer.
    s.send = kind == CollKind::kAllGather ? staging + own : staging;
    s.recv = kind == CollKind::kAllGather ? staging : staging + own;
    return host(s);
  };
  return c;
}

}  // namespace

algo::OpKind OpKindOf(CollKind kind) {
  switch (kind) {
#define SIEVE_DEVICE_ROW_0(name)
#define SIEVE_DEVICE_ROW_1(name) \
  case CollKind::k##name:        \
    return algo::OpKind::k##name;
#define SIEVE_COLLECTIVE(name, wire, text, device) SIEVE_DEVICE_ROW_##device(name)
#include "core/collectives.def"
#undef SIEVE_COLLECTIVE
#undef SIEVE_DEVICE_ROW_0
#undef SIEVE_DEVICE_ROW_1
    case CollKind::kAllReduceWhole:
      return algo::OpKind::kAllReduce;
    case CollKind::kReduceScatterWhole:
      return algo::OpKind::kReduceScatter;
    case CollKind::kAllGatherWhole:
      return algo::OpKind::kAllGather;
  }
  return algo::OpKind::kAllReduce;
}

const char* CollKindName(CollKind kind) { return algo::OpKindName(OpKindOf(kind)); }

bool DeviceKindOf(algo::OpKind op, CollKind* kind) {
  switch (op) {
#define SIEVE_DEVICE_ROW_0(name) \
  case algo::OpKind::k##name:    \
    return false;
#define SIEVE_DEVICE_ROW_1(name)  \
  case algo::OpKind::k##name:     \
    *kind = CollKind::k##name;    \
    return true;
#define SIEVE_COLLECTIVE(name, wire, text, device) SIEVE_DEVICE_ROW_##device(name)
#include "core/collectives.def"
#undef SIEVE_COLLECTIVE
#undef SIEVE_DEVICE_ROW_0
#undef SIEVE_DEVICE_ROW_1
  }
  return false;
}

namespace {
// `run`, logging the transports after its first success.
HostCollective LoggingTransports(Comm& comm, HostCollective run) {
  Comm* c = &comm;
  return [c, run = std::move(run)](const CollArgs& staged) {
    Status st = run(staged);
    if (st.ok()) c->LogTransportOnce();
    return st;
  };
}
}  // namespace

Status EnqueueDeviceCollective(Comm& comm, CollKind kind, const CollArgs& args,
                               CUstream_st* stream, HostCollective run) {
  HostCollective host = LoggingTransports(comm, std::move(run));
  ProgressEngine* engine = nullptr;
  SIEVE_RETURN_IF_ERROR(EngineFor(comm, {args.send, args.recv}, &engine));
  const Config& cfg = comm.config();
  size_t es = kernels::DTypeSize(args.dtype);
  int n = comm.size(), rank = comm.rank();
  StagedOp op;
  op.stream = stream;
  op.depth = cfg.gpu_pipeline;
  switch (kind) {
    case CollKind::kAllReduceWhole: {
      op.name = CollKindName(kind);
      op.key = args.send;
      StagedChunk c = Elementwise(args, kind, rank, 0, args.count, host);
      op.chunks.push_back(std::move(c));
      break;
    }
    case CollKind::kAllReduce:
    case CollKind::kBroadcast:
    case CollKind::kReduce: {
      op.name = CollKindName(kind);
      size_t off = 0;
      for (size_t len : SplitEven(args.count, std::max<size_t>(1, cfg.gpu_chunk_bytes / es))) {
        op.chunks.push_back(Elementwise(args, kind, rank, off, len, host));
        off += len;
      }
      break;
    }
    case CollKind::kReduceScatterWhole:
    case CollKind::kAllGatherWhole:
      op.name = CollKindName(kind);
      op.key = args.send;
      op.chunks.push_back(Blocked(args, kind, rank, n, 0, args.count, host));
      break;
    case CollKind::kAllGather:
    case CollKind::kReduceScatter: {
      op.name = CollKindName(kind);
      size_t per_chunk = std::max<size_t>(1, cfg.gpu_chunk_bytes / (es * static_cast<size_t>(n)));
      size_t off = 0;
      for (size_t len : SplitEven(args.count, per_chunk)) {
        op.chunks.push_back(Blocked(args, kind, rank, n, off, len, host));
        off += len;
      }
      break;
    }
  }
  return engine->Enqueue(std::move(op));
}

Status EnqueueDevicePartial(Comm& comm, const char* name, const CollArgs& args,
                            CUstream_st* stream, const std::vector<ElemRange>& recv_in,
                            const std::vector<ElemRange>& recv_out, HostCollective run) {
  HostCollective host = LoggingTransports(comm, std::move(run));
  ProgressEngine* engine = nullptr;
  SIEVE_RETURN_IF_ERROR(EngineFor(comm, {args.send, args.recv}, &engine));
  const size_t es = kernels::DTypeSize(args.dtype), bytes = args.count * es;
  const bool in_place = args.send == args.recv;
  const size_t recv_at = in_place ? 0 : bytes;
  StagedChunk c;
  c.bytes = recv_at + bytes;
  c.in.push_back({0, At(args.send, 0), bytes});
  for (const ElemRange& r : recv_in)
    if (!in_place && r.count > 0)
      c.in.push_back({recv_at + r.begin * es, At(args.recv, r.begin * es), r.count * es});
  for (const ElemRange& r : recv_out)
    if (r.count > 0)
      c.out.push_back({recv_at + r.begin * es, At(args.recv, r.begin * es), r.count * es});
  c.run = [staged = args, host, recv_at](char* staging) {
    CollArgs s = staged;
    s.send = staging;
    s.recv = staging + recv_at;
    return host(s);
  };
  StagedOp op;
  op.name = name;
  op.stream = stream;
  op.depth = comm.config().gpu_pipeline;
  op.key = args.send;
  op.chunks.push_back(std::move(c));
  return engine->Enqueue(std::move(op));
}

}  // namespace sieve::gpu
