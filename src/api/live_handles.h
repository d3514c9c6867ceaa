// The table of live handles of one kind (masks, layouts): a handle is looked
// up before it is read, so a freed, foreign or corrupted pointer is reported,
// never dereferenced. A handle is a struct with a `magic` word and a
// `std::shared_ptr<...> state`; the state outlives the handle while a queued
// collective holds it.
#ifndef SIEVE_API_LIVE_HANDLES_H_
#define SIEVE_API_LIVE_HANDLES_H_

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_set>
#include <utility>

#include "comm/comm.h"
#include "core/status.h"

namespace sieve {

template <typename Handle, uint64_t kMagic>
class LiveHandles {
 public:
  using State = typename decltype(Handle::state)::element_type;

  // `what` names the kind in messages ("mask", "layout").
  explicit LiveHandles(const char* what) : what_(what) {}

  // The state of a live handle; InvalidArgument for NULL or anything else.
  Status Lookup(const Handle* handle, std::shared_ptr<State>* out) {
    std::lock_guard<std::mutex> lock(mu_);
    SIEVE_RETURN_IF_ERROR(CheckLive(handle));
    *out = handle->state;
    return Status::OK();
  }

  // A new live handle holding `state`.
  Handle* Publish(std::shared_ptr<State> state) {
    auto* handle = new Handle;
    handle->state = std::move(state);
    std::lock_guard<std::mutex> lock(mu_);
    live_.insert(handle);
    return handle;
  }

  // Ends a live handle, checked and removed under one lock (of two threads
  // removing it, the second is told it is not registered). Queued
  // collectives keep their own reference to the state.
  Status Remove(Handle* handle) {
    std::lock_guard<std::mutex> lock(mu_);
    SIEVE_RETURN_IF_ERROR(CheckLive(handle));
    live_.erase(handle);
    handle->magic = 0;
    delete handle;
    return Status::OK();
  }

 private:
  Status CheckLive(const Handle* handle) const {  // REQUIRES: mu_ held
    if (handle == nullptr) return Status::InvalidArgument(what_ + " is NULL");
    if (live_.count(handle) == 0 || handle->magic != kMagic)
      return Status::InvalidArgument(
          StrFormat("%s is not a registered %s (deregistered, never registered, or corrupted)",
                    what_.c_str(), what_.c_str()));
    return Status::OK();
  }

  const std::string what_;
  std::mutex mu_;
  std::unordered_set<const Handle*> live_;
};

// A registered handle is used on the communicator and count it was registered
// for; InvalidArgument naming `what` otherwise.
inline Status CheckRegisteredFor(const char* what, const Comm* owner, size_t registered_count,
                                 const Comm* comm, size_t count) {
  if (owner != comm)
    return Status::InvalidArgument(StrFormat("%s was registered on another communicator", what));
  if (registered_count != count)
    return Status::InvalidArgument(
        StrFormat("count %zu differs from the %zu elements the %s was registered for", count,
                  registered_count, what));
  return Status::OK();
}

}  // namespace sieve

#endif  // SIEVE_API_LIVE_HANDLES_H_
