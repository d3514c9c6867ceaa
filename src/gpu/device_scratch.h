// Device memory for the algorithms' scratch and work buffers on the direct
// path, in one CUDA context, kept from call to call.
//
// Blocks are plain device allocations (DeviceOps::AllocDeviceBlock), not
// stream-ordered pool memory: the transport hands them to UCX, and UCX
// releases differ in how they detect pool memory. Freeing a plain block may
// synchronize the whole device (a training step's kernels included), so a
// freed buffer goes back to this cache and blocks are released only when a
// larger one is needed or the engine ends.
#ifndef SIEVE_GPU_DEVICE_SCRATCH_H_
#define SIEVE_GPU_DEVICE_SCRATCH_H_

#include <cstddef>
#include <map>

#include "algo/scratch.h"
#include "gpu/device_ops.h"

namespace sieve::gpu {

class DeviceScratch : public algo::ScratchAllocator {
 public:
  explicit DeviceScratch(DeviceOps* ops) : ops_(ops) {}
  // Releases every block. REQUIRES: the context current, no block in use.
  ~DeviceScratch() override;
  DeviceScratch(const DeviceScratch&) = delete;
  DeviceScratch& operator=(const DeviceScratch&) = delete;

  // The smallest free block of at least `bytes`, else a new one (free blocks
  // smaller than `bytes` are released first, so the cache stays near the
  // largest call's working set). REQUIRES: the context current.
  Status Allocate(size_t bytes, void** out) override;
  // Back to the cache. REQUIRES: the kernels and transfers on it are done
  // (the direct path waits for each kernel before the data moves on).
  void Free(void* p) override;

  size_t blocks() const { return sizes_.size(); }

 private:
  DeviceOps* ops_;
  std::map<void*, size_t> sizes_;           // every block: its size
  std::multimap<size_t, void*> free_by_size_;  // the blocks not in use
};

}  // namespace sieve::gpu

#endif  // SIEVE_GPU_DEVICE_SCRATCH_H_
