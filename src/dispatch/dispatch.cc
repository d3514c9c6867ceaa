// Host or device (plan::ChooseMemory), then the mode. Nothing here names gpu/:
// a call on host buffers never enters it.
#include "dispatch/dispatch.h"

#include "comm/group.h"
#include "core/log.h"
#include "dispatch/modes.h"
#include "plan/device_choice.h"

namespace sieve::dispatch {

namespace {

using coll::Call;
using plan::MemoryKind;

Status SubmitSendRecv(Comm* comm, const Call& call) {
  const char* name = call.is_send ? "sendbuff" : "recvbuff";
  void* buffer = call.is_send ? const_cast<void*>(call.args.send) : call.args.recv;
  MemoryKind memory = MemoryKind::kHost;
  SIEVE_RETURN_IF_ERROR(plan::ChooseMemory({{name, buffer}}, &memory));
  P2pOp op;
  op.comm = comm;
  op.is_send = call.is_send;
  op.peer = call.peer;
  op.buffer = buffer;
  op.bytes = call.args.count * kernels::DTypeSize(call.args.dtype);
  op.stream = call.stream;
  if (memory == MemoryKind::kDevice) op.enqueue_on_device = DeviceSendRecv();
  return SubmitP2p(op);
}

}  // namespace

Status Submit(Comm* comm, const Call& call) {
  if (call.peer >= 0) return SubmitSendRecv(comm, call);
  const coll::Mode* mode = &ModeOf(call.kind);
  const coll::CollArgs& a = call.args;
  MemoryKind memory = MemoryKind::kHost;
  if (a.count > 0 || mode->enqueue_on_device == nullptr)
    SIEVE_RETURN_IF_ERROR(plan::ChooseMemory({{"sendbuff", call.uses_send ? a.send : nullptr},
                                              {"recvbuff", call.uses_recv ? a.recv : nullptr}},
                                             &memory));
  SIEVE_TRACE(kLogCall, "%s: send %p recv %p count %zu dtype %d op %d root %d (%s)", call.entry,
              a.send, a.recv, a.count, static_cast<int>(a.dtype), static_cast<int>(a.op), a.root,
              plan::MemoryKindName(memory));
  if (memory == MemoryKind::kDevice) {
    if (mode->enqueue_on_device == nullptr)
      return Status::InvalidUsage(StrFormat("%s %s", call.entry, mode->no_device));
    return SubmitDeviceCall(comm,
                            [comm, call, mode] { return mode->enqueue_on_device(*comm, call); });
  }
  return SubmitHostCall(comm, [comm, call, mode] {
    Status st = mode->run_on_host(*comm, call);
    if (st.ok()) comm->LogTransportOnce();
    return st;
  });
}

Status SubmitCollective(Comm* comm, const char* entry, algo::OpKind kind,
                        const coll::CollArgs& args, std::shared_ptr<const coll::ModeParams> params,
                        CUstream_st* stream) {
  Call call;
  call.entry = entry;
  call.kind = kind;
  call.args = args;
  call.params = std::move(params);
  call.stream = stream;
  return Submit(comm, call);
}

Status RefuseDeviceMemory(const char* name, const void* ptr, const char* why) {
  MemoryKind memory = MemoryKind::kHost;
  SIEVE_RETURN_IF_ERROR(plan::ChooseMemory({{name, ptr}}, &memory));
  if (memory == MemoryKind::kDevice) return Status::InvalidArgument(why);
  return Status::OK();
}

}  // namespace sieve::dispatch
