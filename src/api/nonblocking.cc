// Non-blocking handles: config checks, background creation and submission.
#include "api/nonblocking.h"

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <thread>

#include "comm/thread_slice.h"
#include "core/log.h"

namespace sieve {

namespace {

// The first layout of sieveConfig_t (what SIEVE_CONFIG_VERSION_MIN defined).
constexpr size_t kConfigV1Bytes = offsetof(sieveConfig_t, commName) + sizeof(const char*);

// Hands `comm`'s operations to `worker`; `state` is in progress until each
// has run. A failure is logged and becomes the communicator's async error.
Comm::BackgroundSubmit MakeSubmitter(BackgroundWorker* worker, std::shared_ptr<AsyncState> state,
                                     Comm* comm) {
  return [worker, state, comm](std::function<Status()> op) {
    state->pending.fetch_add(1);
    worker->Submit([state, comm, op = std::move(op)] {
      Status result;
      GuardBackground(comm, "non-blocking operation", [&] {
        result = op();
        return result;
      });
      if (!result.ok()) comm->RecordAsyncError(result);
      state->TaskDone();
    });
  };
}

// The last step of a background creation: the handle gets its communicator
// (or the error), unless an abort freed the handle meanwhile.
void Publish(CommHandle* handle, AsyncState& state, std::unique_ptr<Comm> created,
             const Status& status) {
  std::lock_guard<std::mutex> lock(state.mu);
  if (state.abandoned) {
    if (created) created->RequestAbort();  // peers may be gone: close at once
    return;                                // `created` goes here, on this thread
  }
  if (!status.ok()) {
    state.init_error = status;
    return;
  }
  Comm* impl = created.get();
  impl->SetBackground(MakeSubmitter(handle->worker.get(), handle->async, impl));
  handle->impl = std::move(created);
  handle->live.store(impl, std::memory_order_release);
}

}  // namespace

Status ReadCommConfig(const sieveConfig_t* config, CommOptions* out) {
  *out = CommOptions();
  if (config == nullptr) return Status::OK();
  if (config->magic != SIEVE_CONFIG_MAGIC)
    return Status::InvalidArgument(
        StrFormat("config has magic 0x%x, not SIEVE_CONFIG_MAGIC: start from "
                  "SIEVE_CONFIG_INITIALIZER",
                  config->magic));
  if (config->size < kConfigV1Bytes)
    return Status::InvalidArgument(StrFormat(
        "config size %zu is below the %zu bytes of the first sieveConfig_t", config->size,
        kConfigV1Bytes));
  if (config->version < SIEVE_CONFIG_VERSION_MIN)
    return Status::InvalidArgument(
        StrFormat("config version %u predates configs (first: %d); start from "
                  "SIEVE_CONFIG_INITIALIZER",
                  config->version, SIEVE_CONFIG_VERSION_MIN));
  int blocking = config->blocking;
  if (blocking != 0 && blocking != 1 && blocking != SIEVE_CONFIG_UNDEF_INT)
    return Status::InvalidArgument(
        StrFormat("config blocking is %d; it is 0, 1 or left undefined", blocking));
  out->blocking = blocking;
  if (config->commName != nullptr) out->name = config->commName;
  return Status::OK();
}

sieveComm_t NewReadyHandle(std::unique_ptr<Comm> impl) {
  auto handle = std::make_shared<CommHandle>();
  handle->live.store(impl.get(), std::memory_order_release);
  handle->impl = std::move(impl);
  return LiveComms().Publish(std::move(handle));
}

std::shared_ptr<CommHandle> NewPendingHandle(int rank, int size) {
  auto handle = std::make_shared<CommHandle>();
  handle->worker = std::make_unique<BackgroundWorker>();
  handle->pending_rank = rank;
  handle->pending_size = size;
  return handle;
}

void CreateInBackground(BackgroundWorker* worker, CommHandle* handle,
                        std::vector<std::shared_ptr<AsyncState>> holds, CreateFn create) {
  for (const auto& state : holds) state->pending.fetch_add(1);
  std::shared_ptr<AsyncState> own = handle != nullptr ? handle->async : nullptr;
  worker->Submit([handle, own, holds, create = std::move(create)] {
    std::unique_ptr<Comm> created;
    Status status;
    Guard(nullptr, "non-blocking communicator creation", [&] {
      status = create(&created);
      return status;
    });
    // This task runs on the thread that will run the communicator's operations.
    if (created && created->config().worker_realtime && !RequestRealtime())
      SIEVE_INFO(kLogInit, "background thread: real-time scheduling refused (SIEVE_WORKER_REALTIME "
                 "needs CAP_SYS_NICE or RLIMIT_RTPRIO); it keeps the short slice");
    if (own) Publish(handle, *own, std::move(created), status);
    for (const auto& state : holds) state->TaskDone();
  });
}

Status WaitAsyncError(CommHandle* comm, int timeout_ms, sieveResult_t* out) {
  std::shared_ptr<AsyncState> state = comm->async;
  std::unique_lock<std::mutex> lock(state->mu);
  auto settled = [&] { return !state->Busy() || state->abandoned; };
  if (timeout_ms < 0)
    state->changed.wait(lock, settled);
  else
    state->changed.wait_for(lock, std::chrono::milliseconds(timeout_ms), settled);
  // Under the lock: an abort marks the state abandoned (here, with the lock) before freeing.
  if (state->abandoned)
    return Status::InvalidUsage("the communicator was aborted while this call waited for it");
  if (state->Busy()) {
    *out = sieveInProgress;
  } else if (Comm* impl = comm->Impl()) {
    *out = static_cast<sieveResult_t>(impl->AsyncError());
  } else {
    *out = static_cast<sieveResult_t>(state->init_error.code());
  }
  return Status::OK();
}

void FinishBackground(CommHandle* comm) {
  // Background work of this communicator may run on another's thread (a split).
  while (comm->Busy()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  comm->worker.reset();
}

bool AbandonBackground(CommHandle* comm, double deadline_s) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(deadline_s);
  {
    std::lock_guard<std::mutex> lock(comm->async->mu);
    comm->async->abandoned = true;  // a creation still running keeps what it makes
    comm->async->changed.notify_all();  // waiters leave without touching the handle
  }
  // Work on the communicator sees the abort and stops; a creation (bootstrap)
  // cannot be interrupted, so it is not waited for: it finishes on its own.
  Comm* impl = comm->Impl();
  if (impl != nullptr) impl->RequestAbort();
  if (impl == nullptr) deadline = std::chrono::steady_clock::now();
  while (comm->Busy() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  bool joined = true;
  if (comm->worker) {
    double left = std::chrono::duration<double>(deadline - std::chrono::steady_clock::now()).count();
    joined = comm->worker->Abandon(std::max(0.0, left));
    comm->worker.reset();
  }
  return joined && !comm->Busy();
}

}  // namespace sieve
