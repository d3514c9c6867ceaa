// The C boundary: what a sieveComm_t stands for (a CommHandle in the table of
// live communicator handles), and Guard(), which runs an entry point's body,
// catches every exception (none may cross the C ABI into a foreign process),
// refuses a second thread's call on a communicator, logs a failure once at
// WARN and records it as last error.
#ifndef SIEVE_API_API_GUARD_H_
#define SIEVE_API_API_GUARD_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>

#include "api/live_handles.h"
#include "comm/background_worker.h"
#include "comm/comm.h"
#include "core/status.h"
#include "sieve.h"

namespace sieve {

// What a handle shares with the background tasks that touch its communicator
// (held by shared_ptr, so it outlives a handle freed by an abort).
struct AsyncState {
  // Background tasks queued or running that use this communicator: while
  // any is, the communicator is "in progress".
  std::atomic<int> pending{0};
  std::mutex mu;             // guards the fields below
  bool abandoned = false;    // the handle was freed (abort): tasks must not touch it
  Status init_error;         // why a non-blocking init/split failed (impl stays null)
  std::condition_variable changed;  // signalled (with mu) when a task ends or on abandon
  bool Busy() const { return pending.load(std::memory_order_acquire) > 0; }
  // A background task is done: wakes sieveCommWaitAsyncError's waiters.
  void TaskDone() {
    pending.fetch_sub(1, std::memory_order_release);
    std::lock_guard<std::mutex> lock(mu);  // a waiter between its check and its sleep holds mu
    changed.notify_all();
  }
};

// What a sieveComm_t stands for.
struct CommHandle {
  // Owns the communicator. Written once: before the handle reaches the user,
  // or (non-blocking init/split) by the background thread, which then
  // publishes it in `live`. Read it through Impl() only.
  std::unique_ptr<sieve::Comm> impl;
  std::atomic<sieve::Comm*> live{nullptr};
  std::shared_ptr<sieve::AsyncState> async = std::make_shared<sieve::AsyncState>();
  // The thread a non-blocking communicator's work runs on; null when blocking.
  std::unique_ptr<sieve::BackgroundWorker> worker;
  // Rank and size while a non-blocking init runs (-1: not known yet, a split).
  int pending_rank = -1, pending_size = -1;

  // The communicator once it exists (null while a non-blocking init runs, or
  // after it failed).
  sieve::Comm* Impl() const { return live.load(std::memory_order_acquire); }
  bool Busy() const { return async->Busy(); }
};

// The live communicator handles: a sieveComm_t is a value from this table
// (api/live_handles.h), never the address of a CommHandle.
using CommHandles = LiveHandles<sieveComm, CommHandle>;
CommHandles& LiveComms();
// The handle behind `comm`; InvalidArgument when it is NULL or not live.
inline Status LookupComm(sieveComm_t comm, std::shared_ptr<CommHandle>* out) {
  return LiveComms().Lookup(comm, out);
}

// Runs body; maps its Status (or an exception) to sieveResult_t. `comm` may be
// null (calls without a communicator); when set, its last/async error is kept,
// and a call while another thread is in one on `comm` is refused
// (InvalidUsage) without running body. kInProgress (handed to a background
// thread) is not a failure.
sieveResult_t Guard(Comm* comm, const char* call, const std::function<Status()>& body);
// Guard for work the library runs on a communicator's own background thread
// on behalf of a call that already returned: counted as a call in progress
// (for abort), never refused as a second thread's.
sieveResult_t GuardBackground(Comm* comm, const char* call, const std::function<Status()>& body);
// Guard for a query on `handle` that must not wait for its background work
// (counters, async error): run as a call without a communicator, but a failure
// is also the message sieveGetLastError(handle) returns, when handle is live.
sieveResult_t GuardQuery(sieveComm_t handle, const char* call, const std::function<Status()>& body);

// The communicator behind a live handle with no background work in progress,
// else null (the entry point's checks then say what is wrong). Valid while the
// caller's call runs: destroy and abort wait for (or abort) calls in progress.
Comm* IdleImpl(sieveComm_t comm);

// The calling thread's last error message.
const char* ThreadLastError();

}  // namespace sieve

#endif  // SIEVE_API_API_GUARD_H_
