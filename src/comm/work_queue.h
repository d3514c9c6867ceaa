// The one order of a communicator's calls when some of its work runs beyond the
// calling thread. gpu/'s progress engine queues device-buffer work there and
// registers itself with the communicator (Comm::SetWorkQueue), so a call on host
// buffers runs after the device work queued before it (Comm::RunInOrder): every
// rank issues its operations in the same order. comm/ knows only this interface.
#ifndef SIEVE_COMM_WORK_QUEUE_H_
#define SIEVE_COMM_WORK_QUEUE_H_

#include <functional>

#include "core/status.h"

namespace sieve {

class WorkQueue {
 public:
  virtual ~WorkQueue() = default;
  // Runs `fn` after everything queued before it and returns its status.
  virtual Status RunHost(std::function<Status()> fn) = 0;
};

}  // namespace sieve

#endif  // SIEVE_COMM_WORK_QUEUE_H_
