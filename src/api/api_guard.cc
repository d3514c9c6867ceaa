// Guard(): exception barrier and error recording for every entry point.
#include "api/api_guard.h"

#include <new>
#include <string>

#include "core/log.h"

namespace sieve {

namespace {
thread_local std::string tls_last_error;
}  // namespace

const char* ThreadLastError() { return tls_last_error.c_str(); }

Comm* IdleImpl(sieveComm_t comm) {
  if (comm == nullptr || comm->magic != kSieveCommMagic || comm->Busy()) return nullptr;
  return comm->Impl();
}

sieveResult_t Guard(Comm* comm, const char* call, const std::function<Status()>& body) {
  Status st;
  if (comm != nullptr) {
    SetLogRank(comm->rank());
    comm->active_calls().fetch_add(1);
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
  if (!st.ok() && st.code() != Code::kInProgress) {
    std::string message = StrFormat("%s: %s", call, st.message().c_str());
    SIEVE_WARN("%s", message.c_str());
    tls_last_error = message;
    if (comm != nullptr) comm->RecordError(st.WithContext(call));
  }
  // Last: an abort in another thread waits for this before freeing the comm.
  if (comm != nullptr) comm->active_calls().fetch_sub(1);
  return static_cast<sieveResult_t>(st.code());
}

}  // namespace sieve
