// DeviceScratch: a per-context cache of plain device blocks.
#include "gpu/device_scratch.h"

#include "core/log.h"

namespace sieve::gpu {

DeviceScratch::~DeviceScratch() {
  for (auto& [block, bytes] : sizes_) {
    Status st = ops_->FreeDeviceBlock(block);
    if (!st.ok()) SIEVE_WARN("freeing direct-path scratch: %s", st.message().c_str());
  }
}

Status DeviceScratch::Allocate(size_t bytes, void** out) {
  if (bytes == 0) bytes = 1;
  auto fit = free_by_size_.lower_bound(bytes);
  if (fit != free_by_size_.end()) {
    *out = fit->second;
    free_by_size_.erase(fit);
    return Status::OK();
  }
  // Growing: the free blocks are all too small for this and later calls alike.
  std::multimap<size_t, void*> too_small;
  too_small.swap(free_by_size_);
  Status freed;
  for (auto& [size, block] : too_small) {
    sizes_.erase(block);
    Status st = ops_->FreeDeviceBlock(block);
    if (freed.ok()) freed = st;
  }
  SIEVE_RETURN_IF_ERROR(freed);
  SIEVE_RETURN_IF_ERROR(ops_->AllocDeviceBlock(bytes, out));
  sizes_[*out] = bytes;
  return Status::OK();
}

void DeviceScratch::Free(void* p) {
  auto it = sizes_.find(p);
  if (it != sizes_.end()) free_by_size_.emplace(it->second, p);
}

}  // namespace sieve::gpu
