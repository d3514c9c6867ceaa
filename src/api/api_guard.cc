// Guard(): exception barrier and error recording for every entry point.
#include "api/api_guard.h"

#include <cstring>
#include <new>
#include <string>

#include "comm/group.h"
#include "core/log.h"

namespace sieve {

namespace {
thread_local std::string tls_last_error;
}  // namespace

const char* ThreadLastError() { return tls_last_error.c_str(); }

CommHandles& LiveComms() {
  static auto* live = new CommHandles(  // outlives static dtors
      "comm", "comm is not a live communicator (destroyed, never created, or corrupted)", 0x5c43);
  return *live;
}

Comm* IdleImpl(sieveComm_t comm) {
  std::shared_ptr<CommHandle> handle;
  if (!LookupComm(comm, &handle).ok() || handle->Busy()) return nullptr;
  return handle->Impl();
}

namespace {

// The entry points a group queues (collectives, send, receive; the shim's
// calls reach these). NCCL's rule: one of them failing inside a group fails the
// whole group, so a peer never gets half a group (a send whose receive was refused
// would be matched by a later receive: wrong data).
bool QueuesInGroup(const char* call) {
  static const char* const kPrefixes[] = {"sieveAllReduce", "sieveBroadcast", "sieveReduce",
                                          "sieveAllGather", "sieveSend", "sieveRecv"};
  for (const char* prefix : kPrefixes)
    if (std::strncmp(call, prefix, std::strlen(prefix)) == 0) return true;
  return false;
}

void Record(Comm* comm, const char* call, const Status& st) {
  std::string message = StrFormat("%s: %s", call, st.message().c_str());
  SIEVE_WARN("%s", message.c_str());
  tls_last_error = message;
  if (comm != nullptr) comm->RecordError(st.WithContext(call));
  if (InGroup() && QueuesInGroup(call)) FailGroup(message);
}

sieveResult_t Run(Comm* comm, bool exclusive, const char* call,
                  const std::function<Status()>& body) {
  Status st;
  if (comm != nullptr) {
    SetLogRank(comm->rank());
    // One thread at a time (sieve.h): a second one would drive the transport
    // concurrently (UCX aborts the process). Refused here, recorded for this thread only.
    if (comm->active_calls().fetch_add(1) != 0 && exclusive) {
      comm->active_calls().fetch_sub(1);
      Record(nullptr, call,
             Status::InvalidUsage("another thread is in a call on this communicator; a "
                                  "communicator is used by one thread at a time (only "
                                  "sieveCommAbort and sieveCommGetAsyncError may be called "
                                  "meanwhile)"));
      return sieveInvalidUsage;
    }
  }
  try {
    st = body();
  } catch (const std::bad_alloc&) {
    st = Status::SystemError("out of memory");
  } catch (const std::exception& e) {
    st = Status::Internal(StrFormat("unexpected exception: %s", e.what()));
  } catch (...) {
    st = Status::Internal("unexpected exception");
  }
  if (!st.ok() && st.code() != Code::kInProgress) Record(comm, call, st);
  // Last: an abort in another thread waits for this before freeing the comm.
  if (comm != nullptr) comm->active_calls().fetch_sub(1);
  return static_cast<sieveResult_t>(st.code());
}

}  // namespace

sieveResult_t Guard(Comm* comm, const char* call, const std::function<Status()>& body) {
  return Run(comm, true, call, body);
}

sieveResult_t GuardBackground(Comm* comm, const char* call, const std::function<Status()>& body) {
  return Run(comm, false, call, body);
}

sieveResult_t GuardQuery(sieveComm_t handle, const char* call,
                         const std::function<Status()>& body) {
  sieveResult_t result = Run(nullptr, false, call, body);
  std::shared_ptr<CommHandle> comm;
  if (result != sieveSuccess && result != sieveInProgress && LookupComm(handle, &comm).ok())
    if (Comm* impl = comm->Impl()) impl->SetLastError(tls_last_error);
  return result;
}

}  // namespace sieve
