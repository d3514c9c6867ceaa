// Whether dense collectives on device buffers go direct (device memory handed
// to UCX, reductions by device kernels: gpu/direct_collectives.h) or are staged
// through pinned host memory (gpu/device_collectives.h). SIEVE_GPU_DIRECT:
// AUTO goes direct when UCX supports CUDA memory and libsieve has its device
// kernels; 0 never; FORCE (tests only) even without UCX's CUDA support.
//
// CUDA_DEVICE_MAX_CONNECTIONS=1 (Megatron sets it) keeps every call staged
// unless the handshake blocks (SIEVE_GPU_SYNC=1). On the direct path the
// caller's stream is parked on cuStreamWaitValue32 while the progress thread
// queues reduction kernels on its own stream, and the stream only resumes
// after those kernels ran. That order is invisible to CUDA (cuda.h warns that
// the scheduler may then serialize work in an order that deadlocks): with one
// hardware queue, the kernels are queued behind the parked wait in the same
// queue and never run. The staged path queues no device work on the progress
// thread, so a parked stream never waits for work behind it. With more
// queues (default 8) two streams share one only when more streams exist than
// queues; tests/gpu/run.sh runs the direct path with many streams alive to
// catch that on a real GPU.
#ifndef SIEVE_GPU_DIRECT_PATH_H_
#define SIEVE_GPU_DIRECT_PATH_H_

#include <string>

#include "comm/comm.h"

namespace sieve::gpu {

// The communicator's choice, with the reason in words (for the INFO line).
bool DirectPath(Comm& comm, std::string* why);

}  // namespace sieve::gpu

#endif  // SIEVE_GPU_DIRECT_PATH_H_
