// Send/receive on device buffers: one staged operation per communicator and
// group — sends are staged in, every transfer runs at once on the progress
// thread, receives are copied out.
#ifndef SIEVE_GPU_DEVICE_P2P_H_
#define SIEVE_GPU_DEVICE_P2P_H_

#include <vector>

#include "comm/group.h"

namespace sieve::gpu {

// The ops of `comm` among `ops` (all on device buffers, all on one stream).
Status EnqueueDeviceP2p(Comm& comm, const std::vector<P2pOp>& ops);

}  // namespace sieve::gpu

#endif  // SIEVE_GPU_DEVICE_P2P_H_
