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
  bool device = false;                 // buffer is device memory (staged, see gpu/)
  struct CUstream_st* stream = nullptr;  // where a device op is enqueued
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

// Runs `op` now, or queues it when inside a group (device-buffer work: `op`
// only enqueues, so it runs on the caller's thread even when non-blocking).
Status SubmitCollective(Comm* comm, std::function<Status()> op);
// Host-buffer work: queued inside a group; outside one, on a non-blocking
// communicator, handed to its background thread (returns kInProgress); else
// run now.
Status SubmitHostCollective(Comm* comm, std::function<Status()> op);
// Host send/recv as SubmitHostCollective; device ones as SubmitCollective.
Status SubmitP2p(const P2pOp& op);

// Posts every send/recv of `comm` among `ops` on host buffers, then waits
// for all of them (the executor behind groups and the device path).
Status RunP2pNow(Comm* comm, const std::vector<P2pOp>& ops);

}  // namespace sieve

#endif  // SIEVE_COMM_GROUP_H_
