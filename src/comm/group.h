// Group semantics (sieveGroupStart/End): calls made inside a group are queued
// per thread and issued together at the outermost GroupEnd — collectives in
// call order, then every send and receive at once so no pattern deadlocks.
#ifndef SIEVE_COMM_GROUP_H_
#define SIEVE_COMM_GROUP_H_

#include <functional>
#include <vector>

#include "comm/comm.h"

namespace sieve {

struct P2pOp {
  Comm* comm = nullptr;
  bool is_send = false;
  int peer = 0;
  void* buffer = nullptr;
  size_t bytes = 0;
  // Device buffers: how a communicator's device sends and receives of one group are
  // enqueued together (gpu::EnqueueDeviceP2p, set by dispatch/); null on host buffers.
  using DeviceBatch = Status (*)(Comm& comm, const std::vector<P2pOp>& ops);
  DeviceBatch enqueue_on_device = nullptr;
  struct CUstream_st* stream = nullptr;  // where a device op is enqueued
  bool on_device() const { return enqueue_on_device != nullptr; }
};

void GroupStart();
// Ends one nesting level; at the outermost, runs what was queued. Errors are
// recorded on every communicator the failing operation used. A group on a
// non-blocking communicator runs on its background thread (kInProgress); it
// may then use no other communicator. A group of device-buffer calls only
// enqueues, so it runs here even then (in call order, in the caller's CUDA
// context); one mixing host and device buffers on a non-blocking
// communicator is refused.
Status GroupEnd();
bool InGroup();
// A call the open group would have queued failed (`message` says which and
// why): sieveGroupEnd then runs none of the group's calls and reports it.
void FailGroup(const std::string& message);

// A call on device buffers: `enqueue` only enqueues on the caller's stream, so it
// runs on the caller's thread, even on a non-blocking communicator: now, or at
// sieveGroupEnd inside a group.
Status SubmitDeviceCall(Comm* comm, std::function<Status()> enqueue);
// A call on host buffers: queued inside a group; outside one, handed to the
// background thread of a non-blocking communicator (returns kInProgress), else
// run now. Wherever it runs, it runs after the work the communicator queued
// before it (Comm::RunInOrder).
Status SubmitHostCall(Comm* comm, std::function<Status()> run);
// A send or receive: on host buffers as SubmitHostCall, on device ones as
// SubmitDeviceCall; inside a group, every one is posted at once at its end.
Status SubmitP2p(const P2pOp& op);

// Posts every send/recv of `comm` among `ops`, all on host memory (the caller's
// buffers, or a device group's staging), then waits for all of them.
Status RunHostP2p(Comm* comm, const std::vector<P2pOp>& ops);

}  // namespace sieve

#endif  // SIEVE_COMM_GROUP_H_
