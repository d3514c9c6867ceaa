// Whether dense collectives on device buffers go direct (device memory handed
// to UCX, reductions by device kernels: gpu/direct_collectives.h) or are staged
// through pinned host memory (gpu/device_collectives.h). SIEVE_GPU_DIRECT:
// AUTO goes direct when UCX supports CUDA memory and libsieve has its device
// kernels; 0 never; FORCE (tests only) even without UCX's CUDA support.
#ifndef SIEVE_GPU_DIRECT_PATH_H_
#define SIEVE_GPU_DIRECT_PATH_H_

#include <string>

#include "comm/comm.h"

namespace sieve::gpu {

// The communicator's choice, with the reason in words (for the INFO line).
bool DirectPath(Comm& comm, std::string* why);

}  // namespace sieve::gpu

#endif  // SIEVE_GPU_DIRECT_PATH_H_
