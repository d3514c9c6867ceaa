// Device memory for the algorithms' scratch and work buffers on the direct
// path, in one CUDA context, kept from call to call.
//
// Blocks are plain device allocations (DeviceOps::AllocDeviceBlock), not
// stream-ordered pool memory: the transport hands them to UCX, and UCX
// releases differ in how they detect pool memory. Allocating or freeing a
// plain block may synchronize the whole device, and the progress thread runs
// the collective while the caller's stream is parked on it: there either
// would be a deadlock. So the caller's thread reserves, at enqueue, blocks
// for every request the collective's plan will make (Reserve), and the
// progress thread only lends them out (Allocate never allocates).
#ifndef SIEVE_GPU_DEVICE_SCRATCH_H_
#define SIEVE_GPU_DEVICE_SCRATCH_H_

#include <cstddef>
#include <map>
#include <mutex>
#include <vector>

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

  // The caller's thread, at enqueue: makes sure that once the collectives
  // queued before are done, `requests` (bytes each) can all be lent at once,
  // adding blocks where needed. Blocks too small for this call are released
  // first only when no collective is queued (a free may synchronize the
  // device; nothing may be waiting for us then). Counts one more collective
  // queued (Done ends it). REQUIRES: the context current, not a progress thread.
  Status Reserve(const std::vector<size_t>& requests);
  // The progress thread, when a collective Reserve counted has ended.
  void Done();

  // The smallest free block of at least `bytes`; never a new one: a request
  // the plan did not reserve is an error naming both.
  Status Allocate(size_t bytes, void** out) override;
  // Back to the cache. REQUIRES: the kernels and transfers on it are done
  // (the direct path waits for each kernel before the data moves on).
  void Free(void* p) override;

  size_t blocks() const;

 private:
  // Whether a free block each can serve `requests` (all blocks free).
  bool Fits(std::vector<size_t> requests, size_t* first_unmet) const;  // REQUIRES: mu_

  DeviceOps* ops_;
  mutable std::mutex mu_;
  std::map<void*, size_t> sizes_;              // every block: its size
  std::multimap<size_t, void*> free_by_size_;  // the blocks not in use
  int queued_ = 0;                             // collectives reserved, not yet Done
};

}  // namespace sieve::gpu

#endif  // SIEVE_GPU_DEVICE_SCRATCH_H_
