// The progress engine a communicator gets on its first device-buffer call,
// owned by the communicator (stopped first when it is destroyed).
#ifndef SIEVE_GPU_COMM_ENGINE_H_
#define SIEVE_GPU_COMM_ENGINE_H_

#include "comm/comm.h"
#include "gpu/progress_engine.h"

namespace sieve::gpu {

Status EngineFor(Comm& comm, ProgressEngine** out);
// nullptr until the communicator's first device call.
ProgressEngine* ExistingEngine(Comm& comm);

}  // namespace sieve::gpu

#endif  // SIEVE_GPU_COMM_ENGINE_H_
