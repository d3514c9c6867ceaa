// Thread-local group queue and the point-to-point executor.
#include "comm/group.h"

#include <algorithm>
#include <memory>
#include <vector>

#include "core/log.h"

namespace sieve {

namespace {

// A queued call remembers its communicator's lifetime: one destroyed or
// aborted before sieveGroupEnd is never touched.
struct QueuedCollective {
  Comm* comm;
  std::weak_ptr<void> alive;
  std::function<Status()> op;
  bool device;  // only enqueues on a stream: runs on the caller's thread
};

struct QueuedP2p {
  P2pOp op;
  std::weak_ptr<void> alive;
};

struct GroupState {
  int depth = 0;
  std::vector<QueuedCollective> collectives;
  std::vector<QueuedP2p> p2p;
  std::string failed;  // the first queueing call that failed (FailGroup), "" if none
};

thread_local GroupState tls_group;

// One communicator's sends and receives of a group: on device buffers enqueued
// together on their stream, on host buffers run (after the work queued before them).
Status RunP2p(Comm* comm, const std::vector<P2pOp>& ops) {
  // A zero-byte op has no buffer to speak of: it goes with the others.
  size_t host = 0;
  P2pOp::DeviceBatch enqueue = nullptr;
  for (const P2pOp& op : ops) {
    if (op.comm != comm || op.bytes == 0) continue;
    if (op.on_device())
      enqueue = op.enqueue_on_device;
    else
      ++host;
  }
  if (enqueue == nullptr) return comm->RunInOrder([&] { return RunHostP2p(comm, ops); });
  if (host != 0)
    return Status::InvalidUsage(
        "a group mixes send/recv on host and on device buffers on one communicator; use "
        "separate groups");
  return enqueue(*comm, ops);
}

// Removes the calls whose communicator is gone; returns how many there were.
size_t DropDead(GroupState& group) {
  const size_t before = group.collectives.size() + group.p2p.size();
  auto dead = [](const auto& queued) { return queued.alive.expired(); };
  group.collectives.erase(
      std::remove_if(group.collectives.begin(), group.collectives.end(), dead),
      group.collectives.end());
  group.p2p.erase(std::remove_if(group.p2p.begin(), group.p2p.end(), dead), group.p2p.end());
  return before - group.collectives.size() - group.p2p.size();
}

// A communicator made unusable by an earlier call of this group (a peer that
// never came, a mismatch) runs none of its later calls: each would wait out the
// timeout again.
Status UnusableNow(Comm* comm) {
  if (comm->AsyncError() == Code::kOk) return Status::OK();
  return Status::InvalidUsage(StrFormat(
      "not run: an earlier call of this group left the communicator unusable (%s)",
      comm->FatalError().c_str()));
}

Status RunQueued(GroupState& group) {
  Status first_error;
  for (QueuedCollective& c : group.collectives) {
    Status st = UnusableNow(c.comm);
    if (st.ok()) st = c.op();
    if (!st.ok()) {
      c.comm->RecordError(st.WithContext("sieveGroupEnd"));
      if (first_error.ok()) first_error = st;
    }
  }
  std::vector<P2pOp> ops;
  std::vector<Comm*> comms;
  for (const QueuedP2p& q : group.p2p) {
    ops.push_back(q.op);
    if (std::find(comms.begin(), comms.end(), q.op.comm) == comms.end()) comms.push_back(q.op.comm);
  }
  for (Comm* comm : comms) {
    Status st = UnusableNow(comm);
    if (st.ok()) st = RunP2p(comm, ops);
    if (!st.ok()) {
      comm->RecordError(st.WithContext("sieveGroupEnd"));
      if (first_error.ok()) first_error = st;
    }
  }
  return first_error;
}

// Every communicator the group's operations use, in first-use order.
std::vector<Comm*> CommsOf(const GroupState& group) {
  std::vector<Comm*> comms;
  auto add = [&](Comm* c) {
    if (std::find(comms.begin(), comms.end(), c) == comms.end()) comms.push_back(c);
  };
  for (const QueuedCollective& c : group.collectives) add(c.comm);
  for (const QueuedP2p& q : group.p2p) add(q.op.comm);
  return comms;
}

// Runs a group (its calls all on live communicators): here, or on the
// background thread of its non-blocking communicator.
Status IssueGroup(const std::shared_ptr<GroupState>& group) {
  std::vector<Comm*> comms = CommsOf(*group);
  Comm* nonblocking = nullptr;
  for (Comm* comm : comms)
    if (comm->background()) nonblocking = comm;
  if (nonblocking == nullptr) return RunQueued(*group);
  // Device-buffer work only enqueues, and must be enqueued here, in call
  // order and in the caller's CUDA context (the background thread has none,
  // and would enqueue after this returned).
  bool device = false, host = false;
  for (const QueuedCollective& c : group->collectives) (c.device ? device : host) = true;
  for (const QueuedP2p& q : group->p2p) (q.op.on_device() ? device : host) = true;
  if (device && host)
    return Status::InvalidUsage(
        "a group on a non-blocking communicator mixes calls on host and on device buffers; "
        "use separate groups; nothing of it was run");
  if (device) return RunQueued(*group);
  // One background thread runs the group; another communicator in it would
  // be used from that thread while its owner may use it too.
  if (comms.size() > 1)
    return Status::InvalidUsage(StrFormat(
        "a group with a non-blocking communicator may use only that communicator (this one "
        "used %zu); nothing of it was run",
        comms.size()));
  nonblocking->background()([group] { return RunQueued(*group); });
  return Status::InProgress("the group runs in the background");
}

}  // namespace

Status RunHostP2p(Comm* comm, const std::vector<P2pOp>& ops) {
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
  auto group = std::make_shared<GroupState>();
  std::swap(*group, tls_group);
  if (!group->failed.empty())
    return Status::InvalidUsage(StrFormat(
        "a call in this group failed (%s); none of the group's calls was run",
        group->failed.c_str()));
  const size_t dropped = DropDead(*group);
  Status ran = IssueGroup(group);
  if (dropped == 0) return ran;
  return Status::InvalidUsage(StrFormat(
      "%zu call(s) queued in this group on a communicator destroyed or aborted before "
      "sieveGroupEnd were dropped; the group's other calls were issued (%s)",
      dropped, ran.ok() ? "and succeeded" : ran.ToString().c_str()));
}

bool InGroup() { return tls_group.depth > 0; }

void FailGroup(const std::string& message) {
  if (tls_group.failed.empty()) tls_group.failed = message;
}

Status SubmitDeviceCall(Comm* comm, std::function<Status()> enqueue) {
  if (!InGroup()) return enqueue();
  tls_group.collectives.push_back({comm, comm->lifetime(), std::move(enqueue), true});
  return Status::OK();
}

Status SubmitHostCall(Comm* comm, std::function<Status()> run) {
  auto ordered = [comm, run = std::move(run)] { return comm->RunInOrder(run); };
  if (InGroup()) {
    tls_group.collectives.push_back({comm, comm->lifetime(), std::move(ordered), false});
    return Status::OK();
  }
  if (!comm->background()) return ordered();
  comm->background()(std::move(ordered));
  return Status::InProgress("the operation runs in the background");
}

Status SubmitP2p(const P2pOp& op) {
  if (InGroup()) {
    tls_group.p2p.push_back({op, op.comm->lifetime()});
    return Status::OK();
  }
  if (op.on_device()) return RunP2p(op.comm, {op});
  return SubmitHostCall(op.comm, [op] { return RunHostP2p(op.comm, {op}); });
}

}  // namespace sieve
