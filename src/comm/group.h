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
// recorded on every communicator the failing operation used.
Status GroupEnd();
bool InGroup();

// Runs `op` now, or queues it when inside a group.
Status SubmitCollective(Comm* comm, std::function<Status()> op);
Status SubmitP2p(const P2pOp& op);

// Posts every send/recv of `comm` among `ops` on host buffers, then waits
// for all of them (the executor behind groups and the device path).
Status RunP2pNow(Comm* comm, const std::vector<P2pOp>& ops);

}  // namespace sieve

#endif  // SIEVE_COMM_GROUP_H_
