// Collective and point-to-point entry points: check arguments, build
// CollArgs, run now or queue in the current group.
#include "coll/collectives.h"

#include "api/api_guard.h"
#include "api/arg_check.h"
#include "comm/group.h"
#include "core/log.h"
#include "gpu/device_collectives.h"
#include "gpu/direct_collectives.h"
#include "gpu/direct_path.h"
#include "mask/mask_tracker.h"
#include "plan/device_choice.h"

using sieve::Comm;
using sieve::Status;
using sieve::coll::CollArgs;
using sieve::kernels::DTypeSize;

namespace {

// Checks every collective shares: comm, datatype, buffers, byte size of
// count * blocks elements (blocks: nranks for the gathered/scattered side).
Status CheckCommon(sieveComm_t comm, int datatype, const void* sendbuff, const void* recvbuff,
                   size_t count, Comm** impl, CollArgs* args) {
  SIEVE_RETURN_IF_ERROR(sieve::CheckComm(comm, impl));
  SIEVE_RETURN_IF_ERROR(sieve::CheckDataType(datatype, &args->dtype));
  SIEVE_RETURN_IF_ERROR(sieve::CheckByteSize(count, static_cast<size_t>((*impl)->size()),
                                             DTypeSize(args->dtype), "count"));
  args->send = sendbuff;
  args->recv = static_cast<void*>(const_cast<void*>(recvbuff));
  args->count = count;
  return Status::OK();
}

using CollFn = Status (*)(Comm&, const CollArgs&);
using sieve::gpu::CollKind;
using sieve::gpu::MemoryKind;

// Whether sieveAllReduce is plain dense here (elementwise, so device buffers
// can be pipelined in chunks), rather than a mode that needs the whole buffer.
bool PlainDenseAllReduce(const Comm& comm) {
  const sieve::Config& config = comm.config();
  return !config.auto_mask &&
         (!comm.serving_nccl() || config.nccl_mode == sieve::NcclMode::kDense);
}

// Device buffers of a plain dense collective: direct or staged, as
// plan::ChooseDenseOnDevice says given the communicator's direct path.
bool GoesDirect(Comm& comm, CollKind kind, const CollArgs& a) {
  std::string why;
  const bool path = sieve::gpu::DirectPath(comm, &why);
  return sieve::plan::ChooseDenseOnDevice(comm, sieve::gpu::OpKindOf(kind), a.count,
                                          a.count * DTypeSize(a.dtype), path, why)
             .route == sieve::plan::DeviceRoute::kDirect;
}

// Runs the collective on host buffers, or enqueues it on `stream` for device
// buffers; `buffers` are those this rank uses (all host or all device).
Status Submit(Comm* impl, CollFn fn, const CollArgs& args, CollKind kind, sieveStream_t stream,
              std::initializer_list<sieve::gpu::NamedBuffer> buffers) {
  if (args.count == 0) return Status::OK();  // as NCCL: nothing to do, nothing exchanged
  MemoryKind memory = MemoryKind::kHost;
  SIEVE_RETURN_IF_ERROR(sieve::gpu::ClassifyBuffers(buffers, &memory));
  SIEVE_TRACE(sieve::kLogCall, "send %p recv %p count %zu dtype %d op %d root %d (%s)", args.send,
              args.recv, args.count, static_cast<int>(args.dtype), static_cast<int>(args.op),
              args.root, sieve::gpu::MemoryKindName(memory));
  auto host = [impl, fn](const CollArgs& a) {
    Status st = fn(*impl, a);
    if (st.ok()) impl->LogTransportOnce();
    return st;
  };
  if (memory == MemoryKind::kDevice) {
    if (kind == CollKind::kAllReduce && !PlainDenseAllReduce(*impl)) kind = CollKind::kAllReduceWhole;
    return sieve::SubmitCollective(impl, [impl, args, kind, stream, host] {
      if (kind != CollKind::kAllReduceWhole && GoesDirect(*impl, kind, args))
        return sieve::gpu::EnqueueDirect(*impl, kind, args, stream);
      return sieve::gpu::EnqueueDeviceCollective(*impl, kind, args, stream, host);
    });
  }
  return sieve::SubmitHostCollective(
      impl, [impl, args, host] { return sieve::gpu::RunHostCall(*impl, [&] { return host(args); }); });
}

}  // namespace

extern "C" {

sieveResult_t sieveAllReduce(const void* sendbuff, void* recvbuff, size_t count,
                             sieveDataType_t datatype, sieveRedOp_t op, sieveComm_t comm,
                             sieveStream_t stream) {
  return sieve::Guard(sieve::IdleImpl(comm), "sieveAllReduce", [&]() -> Status {
    Comm* impl = nullptr;
    CollArgs args;
    SIEVE_RETURN_IF_ERROR(
        CheckCommon(comm, sieve::EnumValue(datatype), sendbuff, recvbuff, count, &impl, &args));
    SIEVE_RETURN_IF_ERROR(sieve::CheckRedOp(sieve::EnumValue(op), &args.op));
    SIEVE_RETURN_IF_ERROR(sieve::CheckBuffer(sendbuff, "sendbuff", count));
    SIEVE_RETURN_IF_ERROR(sieve::CheckBuffer(recvbuff, "recvbuff", count));
    return Submit(impl, sieve::mask::ModeAllReduce, args, CollKind::kAllReduce, stream,
                  {{"sendbuff", sendbuff}, {"recvbuff", recvbuff}});
  });
}

sieveResult_t sieveBroadcast(const void* sendbuff, void* recvbuff, size_t count,
                             sieveDataType_t datatype, int root, sieveComm_t comm,
                             sieveStream_t stream) {
  return sieve::Guard(sieve::IdleImpl(comm), "sieveBroadcast", [&]() -> Status {
    Comm* impl = nullptr;
    CollArgs args;
    SIEVE_RETURN_IF_ERROR(
        CheckCommon(comm, sieve::EnumValue(datatype), sendbuff, recvbuff, count, &impl, &args));
    SIEVE_RETURN_IF_ERROR(sieve::CheckRank(root, impl->size(), "root"));
    args.root = root;
    if (impl->rank() == root)
      SIEVE_RETURN_IF_ERROR(sieve::CheckBuffer(sendbuff, "sendbuff", count));
    SIEVE_RETURN_IF_ERROR(sieve::CheckBuffer(recvbuff, "recvbuff", count));
    bool is_root = impl->rank() == root;
    return Submit(impl, sieve::coll::Broadcast, args, CollKind::kBroadcast, stream,
                  {{"sendbuff", is_root ? sendbuff : nullptr}, {"recvbuff", recvbuff}});
  });
}

sieveResult_t sieveReduce(const void* sendbuff, void* recvbuff, size_t count,
                          sieveDataType_t datatype, sieveRedOp_t op, int root, sieveComm_t comm,
                          sieveStream_t stream) {
  return sieve::Guard(sieve::IdleImpl(comm), "sieveReduce", [&]() -> Status {
    Comm* impl = nullptr;
    CollArgs args;
    SIEVE_RETURN_IF_ERROR(
        CheckCommon(comm, sieve::EnumValue(datatype), sendbuff, recvbuff, count, &impl, &args));
    SIEVE_RETURN_IF_ERROR(sieve::CheckRedOp(sieve::EnumValue(op), &args.op));
    SIEVE_RETURN_IF_ERROR(sieve::CheckRank(root, impl->size(), "root"));
    args.root = root;
    SIEVE_RETURN_IF_ERROR(sieve::CheckBuffer(sendbuff, "sendbuff", count));
    if (impl->rank() == root)
      SIEVE_RETURN_IF_ERROR(sieve::CheckBuffer(recvbuff, "recvbuff", count));
    bool is_root = impl->rank() == root;
    return Submit(impl, sieve::coll::Reduce, args, CollKind::kReduce, stream,
                  {{"sendbuff", sendbuff}, {"recvbuff", is_root ? recvbuff : nullptr}});
  });
}

sieveResult_t sieveAllGather(const void* sendbuff, void* recvbuff, size_t sendcount,
                             sieveDataType_t datatype, sieveComm_t comm, sieveStream_t stream) {
  return sieve::Guard(sieve::IdleImpl(comm), "sieveAllGather", [&]() -> Status {
    Comm* impl = nullptr;
    CollArgs args;
    SIEVE_RETURN_IF_ERROR(
        CheckCommon(comm, sieve::EnumValue(datatype), sendbuff, recvbuff, sendcount, &impl, &args));
    SIEVE_RETURN_IF_ERROR(sieve::CheckBuffer(sendbuff, "sendbuff", sendcount));
    SIEVE_RETURN_IF_ERROR(sieve::CheckBuffer(recvbuff, "recvbuff", sendcount));
    return Submit(impl, sieve::coll::AllGather, args, CollKind::kAllGather, stream,
                  {{"sendbuff", sendbuff}, {"recvbuff", recvbuff}});
  });
}

sieveResult_t sieveReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount,
                                 sieveDataType_t datatype, sieveRedOp_t op, sieveComm_t comm,
                                 sieveStream_t stream) {
  return sieve::Guard(sieve::IdleImpl(comm), "sieveReduceScatter", [&]() -> Status {
    Comm* impl = nullptr;
    CollArgs args;
    SIEVE_RETURN_IF_ERROR(
        CheckCommon(comm, sieve::EnumValue(datatype), sendbuff, recvbuff, recvcount, &impl, &args));
    SIEVE_RETURN_IF_ERROR(sieve::CheckRedOp(sieve::EnumValue(op), &args.op));
    SIEVE_RETURN_IF_ERROR(sieve::CheckBuffer(sendbuff, "sendbuff", recvcount));
    SIEVE_RETURN_IF_ERROR(sieve::CheckBuffer(recvbuff, "recvbuff", recvcount));
    return Submit(impl, sieve::coll::ReduceScatter, args, CollKind::kReduceScatter, stream,
                  {{"sendbuff", sendbuff}, {"recvbuff", recvbuff}});
  });
}

static sieveResult_t PointToPoint(const char* call, bool is_send, const void* buffer, size_t count,
                                  int datatype, int peer, sieveComm_t comm, sieveStream_t stream) {
  return sieve::Guard(sieve::IdleImpl(comm), call, [&]() -> Status {
    Comm* impl = nullptr;
    CollArgs args;
    SIEVE_RETURN_IF_ERROR(CheckCommon(comm, datatype, buffer, buffer, count, &impl, &args));
    SIEVE_RETURN_IF_ERROR(sieve::CheckRank(peer, impl->size(), "peer"));
    const char* name = is_send ? "sendbuff" : "recvbuff";
    SIEVE_RETURN_IF_ERROR(sieve::CheckBuffer(buffer, name, count));
    MemoryKind memory = MemoryKind::kHost;
    SIEVE_RETURN_IF_ERROR(sieve::gpu::ClassifyBuffers({{name, buffer}}, &memory));
    sieve::P2pOp op;
    op.device = memory == MemoryKind::kDevice;
    op.stream = stream;
    op.comm = impl;
    op.is_send = is_send;
    op.peer = peer;
    op.buffer = const_cast<void*>(buffer);
    op.bytes = count * DTypeSize(args.dtype);
    return sieve::SubmitP2p(op);
  });
}

sieveResult_t sieveSend(const void* sendbuff, size_t count, sieveDataType_t datatype, int peer,
                        sieveComm_t comm, sieveStream_t stream) {
  return PointToPoint("sieveSend", true, sendbuff, count, sieve::EnumValue(datatype), peer, comm,
                      stream);
}

sieveResult_t sieveRecv(void* recvbuff, size_t count, sieveDataType_t datatype, int peer,
                        sieveComm_t comm, sieveStream_t stream) {
  return PointToPoint("sieveRecv", false, recvbuff, count, sieve::EnumValue(datatype), peer, comm,
                      stream);
}

sieveResult_t sieveGroupStart(void) {
  sieve::GroupStart();
  return sieveSuccess;
}

sieveResult_t sieveGroupEnd(void) {
  return sieve::Guard(nullptr, "sieveGroupEnd", [] { return sieve::GroupEnd(); });
}

}  // extern "C"
