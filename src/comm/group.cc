// Thread-local group queue and the point-to-point executor.
#include "comm/group.h"

#include <algorithm>
#include <vector>

#include "core/log.h"

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

// Posts every queued send/recv of one communicator, then waits for all of them.
Status RunP2p(Comm* comm, const std::vector<P2pOp>& ops) {
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
