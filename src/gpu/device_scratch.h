// Device memory for the algorithms' scratch and work buffers on the direct
// path: stream-ordered on the progress thread's stream, usable by the
// transport as soon as Allocate returns.
#ifndef SIEVE_GPU_DEVICE_SCRATCH_H_
#define SIEVE_GPU_DEVICE_SCRATCH_H_

#include "algo/scratch.h"
#include "gpu/device_ops.h"

namespace sieve::gpu {

class DeviceScratch : public algo::ScratchAllocator {
 public:
  DeviceScratch(DeviceOps* ops, cu::Stream stream) : ops_(ops), stream_(stream) {}
  Status Allocate(size_t bytes, void** out) override;
  // Stream-ordered after the kernels that used it; the algorithm has waited
  // for the sends and receives on it.
  void Free(void* p) override;
  // The first failed free (Free cannot return it).
  const Status& status() const { return status_; }

 private:
  DeviceOps* ops_;
  cu::Stream stream_;
  Status status_;
};

}  // namespace sieve::gpu

#endif  // SIEVE_GPU_DEVICE_SCRATCH_H_
