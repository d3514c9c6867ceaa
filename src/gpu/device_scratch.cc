// DeviceScratch: blocks reserved on the caller's thread, lent on the progress thread.
#include "gpu/device_scratch.h"

#include <algorithm>
#include <functional>

#include "core/log.h"

namespace sieve::gpu {

DeviceScratch::~DeviceScratch() {
  for (auto& [block, bytes] : sizes_) {
    Status st = ops_->FreeDeviceBlock(block);
    if (!st.ok()) SIEVE_WARN("freeing direct-path scratch: %s", st.message().c_str());
  }
}

size_t DeviceScratch::blocks() const {
  std::lock_guard<std::mutex> lock(mu_);
  return sizes_.size();
}

bool DeviceScratch::Fits(std::vector<size_t> requests, size_t* first_unmet) const {
  // Largest request to largest block: a distinct block for each exists iff
  // this pairing works.
  std::sort(requests.begin(), requests.end(), std::greater<size_t>());
  std::vector<size_t> have;
  for (const auto& [block, bytes] : sizes_) have.push_back(bytes);
  std::sort(have.begin(), have.end(), std::greater<size_t>());
  for (size_t i = 0; i < requests.size(); ++i) {
    if (i >= have.size() || have[i] < requests[i]) {
      *first_unmet = requests[i];
      return false;
    }
  }
  return true;
}

Status DeviceScratch::Reserve(const std::vector<size_t>& requests) {
  std::vector<size_t> wanted;
  for (size_t r : requests) wanted.push_back(std::max<size_t>(r, 1));
  std::unique_lock<std::mutex> lock(mu_);
  size_t unmet = 0;
  if (!Fits(wanted, &unmet) && queued_ == 0) {
    // Nothing queued: the progress thread holds no block, and a free here
    // waits for nothing of ours. Too-small blocks go, so the cache stays near
    // the largest call's working set.
    for (auto it = free_by_size_.begin(); it != free_by_size_.end() && it->first < unmet;) {
      sizes_.erase(it->second);
      Status st = ops_->FreeDeviceBlock(it->second);
      if (!st.ok()) SIEVE_WARN("freeing direct-path scratch: %s", st.message().c_str());
      it = free_by_size_.erase(it);
    }
  }
  while (!Fits(wanted, &unmet)) {
    // Not under the lock: the allocation may wait for the device, which may
    // wait for a collective queued before, whose progress thread lends blocks.
    lock.unlock();
    void* block = nullptr;
    Status st = ops_->AllocDeviceBlock(unmet, &block);
    lock.lock();
    SIEVE_RETURN_IF_ERROR(st);
    sizes_[block] = unmet;
    free_by_size_.emplace(unmet, block);
  }
  ++queued_;
  return Status::OK();
}

void DeviceScratch::Done() {
  std::lock_guard<std::mutex> lock(mu_);
  if (queued_ > 0) --queued_;
}

Status DeviceScratch::Allocate(size_t bytes, void** out) {
  bytes = std::max<size_t>(bytes, 1);
  std::lock_guard<std::mutex> lock(mu_);
  auto fit = free_by_size_.lower_bound(bytes);
  if (fit == free_by_size_.end())
    return Status::Internal(StrFormat(
        "direct-path scratch: a request of %zu bytes that the collective's plan did not "
        "reserve (%zu blocks, %zu free)",
        bytes, sizes_.size(), free_by_size_.size()));
  *out = fit->second;
  free_by_size_.erase(fit);
  return Status::OK();
}

void DeviceScratch::Free(void* p) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = sizes_.find(p);
  if (it != sizes_.end()) free_by_size_.emplace(it->second, p);
}

}  // namespace sieve::gpu
