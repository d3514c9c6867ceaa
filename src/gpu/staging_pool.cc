// Pinned staging slots: lease, reuse after the stream frees them, bounded size.
#include "gpu/staging_pool.h"

#include <chrono>
#include <string>
#include <thread>

#include "core/log.h"

namespace sieve::gpu {

StagingPool::~StagingPool() { ReleaseAll(); }

void StagingPool::ReleaseAll() {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& s : retired_) FreeMemory(*s);
  retired_.clear();
  for (auto& s : slots_) {
    if (s->Idle()) {
      FreeMemory(*s);
    } else {
      SIEVE_WARN("staging slot %p (%zu bytes) still owed a copy by a stream; not freed",
                 static_cast<void*>(s->data), s->capacity);
    }
  }
  slots_.clear();
}

bool StagingPool::ReapRetired() {
  std::lock_guard<std::mutex> lock(mu_);
  if (retired_.empty()) return false;
  for (const auto& s : slots_)
    if (!s->Idle() && !s->abandoned) return true;  // a stream may wait on us: not now
  for (auto& s : retired_) FreeMemory(*s);
  retired_.clear();
  return false;
}

Slot* StagingPool::FindIdle(size_t bytes, bool take_keyed) const {
  Slot* best = nullptr;  // the smallest idle slot that fits
  for (const auto& s : slots_) {
    if (!s->Idle() || s->capacity < bytes || (s->key != nullptr && !take_keyed)) continue;
    if (best == nullptr || s->capacity < best->capacity) best = s.get();
  }
  return best;
}

Slot* StagingPool::FindKeyed(const void* key, size_t bytes) const {
  for (const auto& s : slots_)
    if (s->key == key && s->capacity >= bytes) return s.get();
  return nullptr;
}

size_t StagingPool::HeldBytes() const {
  size_t total = 0;
  for (const auto& s : slots_) total += s->capacity;
  for (const auto& s : retired_) total += s->capacity;
  return total;
}

size_t StagingPool::allocated_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return HeldBytes();
}

bool StagingPool::AllIdle() const {
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& s : slots_)
    if (!s->Idle() && !s->abandoned) return false;
  return true;
}

size_t StagingPool::slot_count() const {
  std::lock_guard<std::mutex> lock(mu_);
  return slots_.size();
}

// Placement first, pinning second: a page's NUMA node is chosen when it is
// first faulted in, and cuMemHostRegister faults in and pins every page, which
// can then never migrate. So the memory is mapped and bound to the node before
// the driver sees it. Binding cuMemHostAlloc's memory afterwards would be too
// late: its pages are already allocated (wherever the calling thread ran).
void* StagingPool::AllocateOnNode(size_t bytes) {
  if (numa_ < 0) return nullptr;
  std::string why;
  void* mem = placer_->MapOnNode(bytes, numa_, &why);
  if (mem != nullptr) {
    Status st = ops_->RegisterPinned(mem, bytes);
    if (!st.ok()) {
      placer_->Unmap(mem, bytes);
      mem = nullptr;
      why = st.message();
    }
  }
  if (!placement_logged_) {
    placement_logged_ = true;
    if (mem != nullptr)
      SIEVE_INFO(kLogInit, "pinned staging: on NUMA node %d (mapped, bound, then registered)",
                 numa_);
    else
      SIEVE_INFO(kLogInit, "pinned staging: not placed on NUMA node %d (%s); driver-allocated",
                 numa_, why.c_str());
  }
  return mem;
}

void StagingPool::FreeMemory(const Slot& slot) {
  if (slot.placed_bytes > 0) {
    ops_->UnregisterPinned(slot.words);
    placer_->Unmap(slot.words, slot.placed_bytes);
  } else {
    ops_->FreePinned(slot.words);
  }
}

Status StagingPool::Allocate(size_t bytes, Slot** out) {
  const size_t total = kSlotHeaderBytes + bytes;
  void* mem = AllocateOnNode(total);
  const size_t placed_bytes = mem != nullptr ? total : 0;
  if (mem == nullptr) SIEVE_RETURN_IF_ERROR(ops_->AllocPinned(total, &mem));
  auto slot = std::make_unique<Slot>();
  slot->placed_bytes = placed_bytes;
  slot->words = static_cast<SlotWords*>(mem);
  StoreWord(&slot->words->ready, 0);
  StoreWord(&slot->words->done, 0);
  StoreWord(&slot->words->freed, 0);
  slot->data = static_cast<char*>(mem) + kSlotHeaderBytes;
  slot->capacity = bytes;
  *out = slot.get();
  slots_.push_back(std::move(slot));
  return Status::OK();
}

bool StagingPool::RetireIdleSmallerThan(size_t bytes) {
  bool any = false;
  for (size_t i = 0; i < slots_.size();) {
    if (slots_[i]->Idle() && slots_[i]->capacity < bytes) {
      retired_.push_back(std::move(slots_[i]));
      slots_.erase(slots_.begin() + static_cast<std::ptrdiff_t>(i));
      any = true;
    } else {
      ++i;
    }
  }
  return any;
}

Status StagingPool::Acquire(size_t bytes, const void* key, const std::function<bool()>& give_up,
                            Slot** out) {
  if (bytes > cap_bytes_)
    return Status::InvalidUsage(StrFormat(
        "a device buffer operation needs %zu bytes of pinned staging, more than "
        "SIEVE_GPU_STAGING_BYTES (%zu)", bytes, cap_bytes_));
  bytes = bytes == 0 ? 1 : bytes;
  for (int spins = 0;; ++spins) {
    bool retired = false;  // retired staging waits for the reaper (this call's or earlier)
    {
      std::lock_guard<std::mutex> lock(mu_);
      // Preference: the key's own slot; an idle unkeyed one; a new one; one
      // mirroring another buffer (its next call then gets a new address).
      Slot* slot = key != nullptr ? FindKeyed(key, bytes) : nullptr;
      bool keyed = slot != nullptr;
      if (slot == nullptr) slot = FindIdle(bytes, false);
      if (slot == nullptr) {
        if (HeldBytes() + bytes > cap_bytes_) retired = RetireIdleSmallerThan(bytes);
        if (HeldBytes() + bytes <= cap_bytes_) SIEVE_RETURN_IF_ERROR(Allocate(bytes, &slot));
      }
      retired = retired || !retired_.empty();
      if (slot == nullptr) slot = FindIdle(bytes, true);
      if (slot != nullptr && slot->Idle()) {
        slot->leased = true;
        if (key != nullptr) {
          for (auto& s : slots_)  // one slot per key
            if (s.get() != slot && s->key == key) s->key = nullptr;
          slot->key = key;
        } else if (!keyed) {
          slot->key = nullptr;
        }
        *out = slot;
        return Status::OK();
      }
    }
    // Every slot is owed by a stream, or the room is retired staging the
    // reaper has yet to release: wait, waking the reaper on every poll while
    // retired staging is held. Once only was not enough: the reaper clears its
    // flag after a pass that found nothing to free, and a retirement between
    // that pass and the clearing lost its wake-up (the caller then polled
    // forever; ProgressEngine.RetiredStaging... hung about 1 run in 100 under TSan).
    if (retired && wake_reaper_) wake_reaper_();
    if (give_up && give_up())
      return Status::InvalidUsage("gave up waiting for a pinned staging slot (communicator "
                                  "aborted or destroyed)");
    if (spins < 1000)
      std::this_thread::yield();
    else
      std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

void StagingPool::Release(Slot* slot) {
  std::lock_guard<std::mutex> lock(mu_);
  slot->leased = false;
}

}  // namespace sieve::gpu
