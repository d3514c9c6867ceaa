// The table of live handles of one kind (communicators, masks, layouts). A
// handle is not an address: it is a number used once for the life of the
// process (a kind tag and a serial, the handle's generation), looked up here
// before anything is read. A destroyed handle is reported as such, never
// dereferenced, and never mistaken for a later one (no address is reused).
// The state behind a handle is held by shared_ptr: it outlives the handle
// while a queued collective or a call in progress holds it.
#ifndef SIEVE_API_LIVE_HANDLES_H_
#define SIEVE_API_LIVE_HANDLES_H_

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>

#include "comm/comm.h"
#include "core/status.h"

namespace sieve {

// Handle: the opaque C type (`struct sieveMask`, never defined); State: what it stands for.
template <typename Handle, typename State>
class LiveHandles {
 public:
  // `what` names the argument in messages ("mask"), `not_live` says what is wrong with one
  // that is not NULL; `tag` (16 bits, distinct per kind) fills the value's top bits, so no
  // handle is a canonical address and a handle of one kind is never found in another's table.
  LiveHandles(const char* what, const char* not_live, uint16_t tag)
      : what_(what), not_live_(not_live), tag_(uint64_t{tag} << 48) {}

  // The state of a live handle; InvalidArgument for NULL or anything else.
  Status Lookup(const Handle* handle, std::shared_ptr<State>* out) const {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = live_.find(Value(handle));
    if (it == live_.end()) return NotLive(handle);
    *out = it->second;
    return Status::OK();
  }

  // A new live handle for `state`.
  Handle* Publish(std::shared_ptr<State> state) {
    std::lock_guard<std::mutex> lock(mu_);
    const uint64_t value = tag_ | (next_serial_++ & kSerialMask);
    live_.emplace(value, std::move(state));
    return reinterpret_cast<Handle*>(static_cast<uintptr_t>(value));
  }

  // Ends a live handle, checked and removed under one lock (of two threads
  // removing it, the second is told it is not live); its state, if wanted,
  // in *removed. Queued collectives keep their own reference to the state.
  Status Remove(const Handle* handle, std::shared_ptr<State>* removed = nullptr) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = live_.find(Value(handle));
    if (it == live_.end()) return NotLive(handle);
    if (removed != nullptr) *removed = std::move(it->second);
    live_.erase(it);
    return Status::OK();
  }

 private:
  static constexpr uint64_t kSerialMask = (uint64_t{1} << 48) - 1;

  static uint64_t Value(const Handle* handle) {
    return static_cast<uint64_t>(reinterpret_cast<uintptr_t>(handle));
  }

  Status NotLive(const Handle* handle) const {
    if (handle == nullptr) return Status::InvalidArgument(what_ + " is NULL");
    return Status::InvalidArgument(not_live_);
  }

  const std::string what_, not_live_;
  const uint64_t tag_;
  mutable std::mutex mu_;
  uint64_t next_serial_ = 1;  // REQUIRES: mu_; 2^48 handles per kind before values repeat
  std::unordered_map<uint64_t, std::shared_ptr<State>> live_;
};

// A registered handle is used on the communicator and count it was registered
// for; InvalidArgument naming `what` otherwise.
inline Status CheckRegisteredFor(const char* what, uint64_t owner_serial, size_t registered_count,
                                 const Comm* comm, size_t count) {
  if (owner_serial != comm->serial() && owner_serial == comm->parent_serial())
    return Status::InvalidArgument(StrFormat(
        "%s was registered on the communicator this one was shrunk or grown from; register it "
        "again on this one (its ranks differ)",
        what));
  if (owner_serial != comm->serial())
    return Status::InvalidArgument(StrFormat("%s was registered on another communicator", what));
  if (registered_count != count)
    return Status::InvalidArgument(
        StrFormat("count %zu differs from the %zu elements the %s was registered for", count,
                  registered_count, what));
  return Status::OK();
}

}  // namespace sieve

#endif  // SIEVE_API_LIVE_HANDLES_H_
