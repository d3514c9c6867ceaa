// Thread-local group queue and the point-to-point executor.
#include "comm/group.h"

#include <algorithm>
#include <vector>

#include "core/log.h"
#include "gpu/device_collectives.h"
#include "gpu/device_p2p.h"

namespace sieve {

namespace {

struct QueuedCollective {
  Comm* comm;
  std::function<Status()> op;
};

struct GroupState {
  int depth = 0;
  std::vector<QueuedCollective> collectives;
  std::vector<P2pOp> p2p;
};

thread_local GroupState tls_group;

// One communicator's sends and receives: on device buffers enqueued on their
// stream, on host buffers run (after the device work queued before them).
Status RunP2p(Comm* comm, const std::vector<P2pOp>& ops) {
  size_t device = 0, total = 0;
  for (const P2pOp& op : ops) {
    if (op.comm != comm) continue;
    ++total;
    if (op.device) ++device;
  }
  if (device == 0) return gpu::RunHostCall(*comm, [&] { return RunP2pNow(comm, ops); });
  if (device != total)
    return Status::InvalidUsage(
        "a group mixes send/recv on host and on device buffers on one communicator; use "
        "separate groups");
  return gpu::EnqueueDeviceP2p(*comm, ops);
}

Status RunQueued(GroupState& group) {
  Status first_error;
  for (QueuedCollective& c : group.collectives) {
    Status st = c.op();
    if (!st.ok()) {
      c.comm->RecordError(st);
      if (first_error.ok()) first_error = st;
    }
  }
  std::vector<Comm*> comms;
  for (const P2pOp& op : group.p2p)
    if (std::find(comms.begin(), comms.end(), op.comm) == comms.end()) comms.push_back(op.comm);
  for (Comm* comm : comms) {
    Status st = RunP2p(comm, group.p2p);
    if (!st.ok()) {
      comm->RecordError(st);
      if (first_error.ok()) first_error = st;
    }
  }
  return first_error;
}

}  // namespace

Status RunP2pNow(Comm* comm, const std::vector<P2pOp>& ops) {
  algo::Channel ch = comm->MakeP2pChannel();
  for (const P2pOp& op : ops) {
    if (op.comm != comm) continue;
    if (op.is_send)
      SIEVE_RETURN_IF_ERROR(ch.Send(op.peer, op.buffer, op.bytes));
    else
      SIEVE_RETURN_IF_ERROR(ch.Recv(op.peer, op.buffer, op.bytes));
  }
  return ch.WaitAll();
}

void GroupStart() { ++tls_group.depth; }

Status GroupEnd() {
  if (tls_group.depth == 0)
    return Status::InvalidUsage("sieveGroupEnd called without a matching sieveGroupStart");
  if (--tls_group.depth > 0) return Status::OK();
  GroupState group;
  std::swap(group, tls_group);
  return RunQueued(group);
}

bool InGroup() { return tls_group.depth > 0; }

Status SubmitCollective(Comm* comm, std::function<Status()> op) {
  if (!InGroup()) return op();
  tls_group.collectives.push_back({comm, std::move(op)});
  return Status::OK();
}

Status SubmitP2p(const P2pOp& op) {
  if (!InGroup()) return RunP2p(op.comm, {op});
  tls_group.p2p.push_back(op);
  return Status::OK();
}

}  // namespace sieve
