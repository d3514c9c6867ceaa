// Pinned host staging buffers for device collectives. Each slot is one pinned,
// device-mapped allocation: three handshake words at its head, data after.
// A slot is reusable once the stream has written its final generation into
// its `freed` word (the copies out of it are then done), so the pool never
// hands out memory a stream may still read or write.
//
// Pinned memory is never freed while a call enqueues: cuMemFreeHost may
// synchronize the device, so the caller's thread would wait for its own
// streams (and a progress thread for a stream parked on it). Idle slots too
// small for a request that does not fit under the cap are retired instead,
// and the progress thread releases them at a quiet point (ReapRetired).
#ifndef SIEVE_GPU_STAGING_POOL_H_
#define SIEVE_GPU_STAGING_POOL_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "gpu/device_ops.h"
#include "gpu/numa_placer.h"

namespace sieve::gpu {

// Written by the stream (ready, freed) or by the progress thread (done).
struct SlotWords {
  uint32_t ready;  // stream: the inputs of generation `ready` are in the slot
  uint32_t done;   // progress thread: the outputs of generation `done` are in the slot
  uint32_t freed;  // stream: the outputs of generation `freed` were copied out
};

struct Slot {
  SlotWords* words = nullptr;
  char* data = nullptr;
  size_t capacity = 0;
  // Last generation handed out: advanced by the enqueuing call (its lease), read by
  // the progress thread's reaper (Idle) under the pool's lock, hence atomic.
  std::atomic<uint32_t> gen{0};
  const void* key = nullptr;  // the device buffer it last mirrored (see Acquire)
  bool leased = false;        // held by an enqueuing call
  bool abandoned = false;     // its stream will never write `freed` (a failed enqueue)
  size_t placed_bytes = 0;    // > 0: mapped on a NUMA node and registered (else AllocPinned)
  // Starts the next use; every use has its own generation.
  uint32_t NextGen() { return gen.fetch_add(1, std::memory_order_relaxed) + 1; }
  bool Idle() const {
    return !leased && Reached(LoadWord(&words->freed), gen.load(std::memory_order_relaxed));
  }
};

class StagingPool {
 public:
  // cap_bytes bounds the pinned memory held (data capacity of all slots).
  // numa >= 0: slots are placed on that NUMA node through `placer` (default:
  // hwloc) where the machine has several; elsewhere, or if placing fails,
  // they come from AllocPinned.
  StagingPool(DeviceOps* ops, size_t cap_bytes, int numa = -1, NumaPlacer* placer = nullptr)
      : ops_(ops),
        cap_bytes_(cap_bytes),
        numa_(numa),
        placer_(placer != nullptr ? placer : DefaultNumaPlacer()) {}
  // Frees every idle slot; a slot a stream still owes a `freed` write is
  // leaked with a warning rather than freed under the device's feet.
  ~StagingPool();
  StagingPool(const StagingPool&) = delete;
  StagingPool& operator=(const StagingPool&) = delete;

  // Leases an idle slot of at least `bytes`. With `key` (a device buffer), the
  // slot last used for that key is preferred, waited for if busy, so the host
  // algorithms see the same staging address for the same device buffer (the
  // mask tracker and error feedback tell buffers apart by address). Otherwise:
  // an idle slot that mirrors no buffer; a new one within the cap (idle slots
  // too small are retired to make room, and the reaper told); an idle slot
  // mirroring another buffer; else waits until a stream frees one or the
  // reaper releases room. `give_up` is polled while waiting: true ends the
  // wait with an error.
  Status Acquire(size_t bytes, const void* key, const std::function<bool()>& give_up, Slot** out);
  // Ends the lease once the slot's stream operations (ending with the write
  // of `freed`) are enqueued.
  void Release(Slot* slot);

  // Who releases retired slots (the progress engine): told when a slot retires.
  void SetReaper(std::function<void()> wake) { wake_reaper_ = std::move(wake); }
  // Releases the retired slots if no slot is leased or owed by a stream (so
  // no stream waits on a word of this pool while the device may be
  // synchronized); holds the lock meanwhile, so nothing is leased. Returns
  // whether retired slots remain. For the progress thread, between tasks.
  bool ReapRetired();
  // Frees every idle and retired slot now (the engine's teardown, in its
  // context); the destructor does it otherwise.
  void ReleaseAll();

  // No slot is leased or owed by a stream (abandoned slots aside).
  bool AllIdle() const;
  size_t allocated_bytes() const;
  size_t slot_count() const;

 private:
  // The smallest idle slot of at least `bytes`; with take_keyed also one that
  // mirrors a buffer.
  Slot* FindIdle(size_t bytes, bool take_keyed) const;
  size_t HeldBytes() const;  // REQUIRES: mu_ held
  Slot* FindKeyed(const void* key, size_t bytes) const;
  Status Allocate(size_t bytes, Slot** out);
  // Pinned memory on numa_, or nullptr (then AllocPinned); logs the first outcome.
  void* AllocateOnNode(size_t bytes);
  void FreeMemory(const Slot& slot);
  // Moves idle slots smaller than `bytes` to retired_; true if any moved.
  bool RetireIdleSmallerThan(size_t bytes);  // REQUIRES: mu_

  DeviceOps* ops_;
  size_t cap_bytes_;
  int numa_;
  NumaPlacer* placer_;
  bool placement_logged_ = false;  // REQUIRES: mu_ held
  std::function<void()> wake_reaper_;
  mutable std::mutex mu_;
  std::vector<std::unique_ptr<Slot>> slots_;
  std::vector<std::unique_ptr<Slot>> retired_;  // idle, never lent again, counted in the cap
};

// Where data starts in a slot's allocation (handshake words first).
constexpr size_t kSlotHeaderBytes = 256;

}  // namespace sieve::gpu

#endif  // SIEVE_GPU_STAGING_POOL_H_
