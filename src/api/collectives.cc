// Collective and point-to-point entry points: check arguments, describe the
// call (coll::Call), submit it (dispatch/dispatch.h); and the group calls.
#include "api/api_guard.h"
#include "api/arg_check.h"
#include "comm/group.h"
#include "dispatch/dispatch.h"

using sieve::Comm;
using sieve::Status;
using sieve::coll::Call;
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

// sendbuff and recvbuff disjoint, or in place: sendbuff at recvbuff + send_at
// bytes (all-gather: recvbuff + rank * sendcount; 0 for the others), or recvbuff
// at sendbuff + recv_at (reduce-scatter: sendbuff + rank * recvcount).
Status CheckInPlace(const CollArgs& a, size_t send_elems, size_t recv_elems, size_t send_at,
                    size_t recv_at, const char* in_place_text) {
  const size_t es = DTypeSize(a.dtype);
  const uintptr_t in_place = reinterpret_cast<uintptr_t>(a.recv) + send_at * es - recv_at * es;
  return sieve::CheckOverlap(a.send, send_elems * es, a.recv, recv_elems * es, in_place,
                             in_place_text);
}

// Submits the checked collective `kind` (`uses_send`/`uses_recv`: whether this
// rank reads sendbuff and writes recvbuff).
Status Submit(Comm* impl, const char* entry, sieve::algo::OpKind kind, const CollArgs& args,
              sieveStream_t stream, bool uses_send = true, bool uses_recv = true) {
  Call call;
  call.entry = entry;
  call.kind = kind;
  call.args = args;
  call.uses_send = uses_send;
  call.uses_recv = uses_recv;
  call.stream = stream;
  return sieve::dispatch::Submit(impl, call);
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
    SIEVE_RETURN_IF_ERROR(CheckInPlace(args, count, count, 0, 0, "sendbuff == recvbuff"));
    return Submit(impl, "sieveAllReduce", sieve::algo::OpKind::kAllReduce, args, stream);
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
    if (is_root)  // sendbuff is read on the root only
      SIEVE_RETURN_IF_ERROR(CheckInPlace(args, count, count, 0, 0, "sendbuff == recvbuff"));
    return Submit(impl, "sieveBroadcast", sieve::algo::OpKind::kBroadcast, args, stream, is_root);
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
    if (is_root)  // recvbuff is written on the root only
      SIEVE_RETURN_IF_ERROR(CheckInPlace(args, count, count, 0, 0, "sendbuff == recvbuff"));
    return Submit(impl, "sieveReduce", sieve::algo::OpKind::kReduce, args, stream, true,
                  is_root);
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
    const size_t n = static_cast<size_t>(impl->size()), r = static_cast<size_t>(impl->rank());
    SIEVE_RETURN_IF_ERROR(CheckInPlace(args, sendcount, sendcount * n, r * sendcount, 0,
                                       "sendbuff == recvbuff + rank * sendcount"));
    return Submit(impl, "sieveAllGather", sieve::algo::OpKind::kAllGather, args, stream);
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
    const size_t n = static_cast<size_t>(impl->size()), r = static_cast<size_t>(impl->rank());
    SIEVE_RETURN_IF_ERROR(CheckInPlace(args, recvcount * n, recvcount, 0, r * recvcount,
                                       "recvbuff == sendbuff + rank * recvcount"));
    return Submit(impl, "sieveReduceScatter", sieve::algo::OpKind::kReduceScatter, args,
                  stream);
  });
}

static sieveResult_t PointToPoint(const char* call, bool is_send, const void* buffer, size_t count,
                                  int datatype, int peer, sieveComm_t comm, sieveStream_t stream) {
  return sieve::Guard(sieve::IdleImpl(comm), call, [&]() -> Status {
    Comm* impl = nullptr;
    CollArgs args;
    SIEVE_RETURN_IF_ERROR(CheckCommon(comm, datatype, buffer, buffer, count, &impl, &args));
    SIEVE_RETURN_IF_ERROR(sieve::CheckRank(peer, impl->size(), "peer"));
    SIEVE_RETURN_IF_ERROR(sieve::CheckBuffer(buffer, is_send ? "sendbuff" : "recvbuff", count));
    Call p2p;
    p2p.entry = call;
    p2p.args = args;  // args.send and args.recv are both `buffer`
    p2p.peer = peer;
    p2p.is_send = is_send;
    p2p.stream = stream;
    return sieve::dispatch::Submit(impl, p2p);
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
