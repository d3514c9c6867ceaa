// The progress engine a communicator gets on its first device-buffer call,
// owned by the communicator (stopped first when it is destroyed). That call
// also fixes the communicator's device: the context current on the calling
// thread then. Every later device call must come with that context current
// and buffers on that device, else a clear error; and the kernels are loaded
// into it there, before any stream of the communicator is parked.
#ifndef SIEVE_GPU_COMM_ENGINE_H_
#define SIEVE_GPU_COMM_ENGINE_H_

#include <initializer_list>

#include "comm/comm.h"
#include "gpu/progress_engine.h"

namespace sieve::gpu {

// The engine, once the calling thread's context and `buffers` (device
// pointers; null ones skipped) are checked against the communicator's device.
// Created on the first call, and registered as the communicator's work queue
// (Comm::SetWorkQueue), so its calls on host buffers run after its device work.
Status EngineFor(Comm& comm, std::initializer_list<const void*> buffers, ProgressEngine** out);

}  // namespace sieve::gpu

#endif  // SIEVE_GPU_COMM_ENGINE_H_
