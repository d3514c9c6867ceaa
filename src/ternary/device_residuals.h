// Error-feedback residuals of the ternary all-reduce on device buffers: one
// float per quantized element in device memory, per buffer under the host
// registry's key (send buffer, count, datatype, mask), allocated by the
// library on first use and freed (stream-ordered) with the communicator.
#ifndef SIEVE_GPU_DEVICE_RESIDUALS_H_
#define SIEVE_GPU_DEVICE_RESIDUALS_H_

#include <cstddef>

#include "comm/comm.h"
#include "gpu/cuda_abi.h"

namespace sieve::gpu {

struct DeviceResidual {
  float* data = nullptr;  // `elems` floats of device memory
  size_t elems = 0;
  // Not written yet: counts as zeros (as the host registry's fresh residuals).
  // The caller clears it once the kernel that writes it is queued.
  bool fresh = true;
};

// The residual of (send, count, dtype, mask) with `elems` elements (count, or
// the mask's nnz), allocated on `stream` when new or when elems changed; it
// stays valid for the communicator's life, and usable on `stream` from now on
// (ordered after the stream that used it last).
Status DeviceResidualFor(Comm& comm, const void* send, size_t count, int dtype, const void* mask,
                         size_t elems, cu::Stream stream, DeviceResidual** out);

}  // namespace sieve::gpu

#endif  // SIEVE_GPU_DEVICE_RESIDUALS_H_
