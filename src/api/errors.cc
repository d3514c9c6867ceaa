// Error reporting entry points and the version.
#include "api/api_guard.h"
#include "api/arg_check.h"
#include "api/nonblocking.h"

namespace {

sieveResult_t AsyncErrorCall(const char* call, sieveComm_t handle, int timeout_ms,
                             sieveResult_t* asyncError) {
  return sieve::GuardQuery(handle, call, [&]() -> sieve::Status {
    if (asyncError == nullptr) return sieve::Status::InvalidArgument("asyncError is NULL");
    std::shared_ptr<sieve::CommHandle> comm;  // alive while this call waits
    SIEVE_RETURN_IF_ERROR(sieve::LookupComm(handle, &comm));
    return sieve::WaitAsyncError(comm.get(), timeout_ms, asyncError);
  });
}

}  // namespace

extern "C" {

sieveResult_t sieveGetVersion(int* version) {
  if (version == nullptr) {
    return sieve::Guard(nullptr, "sieveGetVersion",
                        [] { return sieve::Status::InvalidArgument("version is NULL"); });
  }
  *version = SIEVE_VERSION_CODE;
  return sieveSuccess;
}

const char* sieveGetErrorString(sieveResult_t result) {
  switch (sieve::EnumValue(result)) {
    case sieveSuccess:
      return "no error";
    case sieveUnhandledCudaError:
      return "unhandled cuda error (run with SIEVE_DEBUG=INFO for details)";
    case sieveSystemError:
      return "unhandled system error (run with SIEVE_DEBUG=INFO for details)";
    case sieveInternalError:
      return "internal error - please report this issue to the Sieve developers";
    case sieveInvalidArgument:
      return "invalid argument (see sieveGetLastError)";
    case sieveInvalidUsage:
      return "invalid usage (see sieveGetLastError)";
    case sieveRemoteError:
      return "remote process exited, failed or did not answer in time";
    case sieveInProgress:
      return "operation in progress";
    default:
      return "unknown result code";
  }
}

const char* sieveGetLastError(sieveComm_t handle) {
  std::shared_ptr<sieve::CommHandle> comm;
  if (handle != nullptr && sieve::LookupComm(handle, &comm).ok()) {
    // Copied to thread-local storage so the pointer stays valid after later errors.
    static thread_local std::string copy;
    if (sieve::Comm* impl = comm->Impl()) {
      copy = impl->LastError();
    } else {
      // No communicator (yet): a non-blocking creation runs, or failed.
      std::lock_guard<std::mutex> lock(comm->async->mu);
      copy = comm->async->init_error.message();
    }
    return copy.c_str();
  }
  return sieve::ThreadLastError();
}

sieveResult_t sieveCommGetAsyncError(sieveComm_t handle, sieveResult_t* asyncError) {
  return AsyncErrorCall("sieveCommGetAsyncError", handle, 0, asyncError);
}

sieveResult_t sieveCommWaitAsyncError(sieveComm_t handle, int timeoutMs,
                                      sieveResult_t* asyncError) {
  return AsyncErrorCall("sieveCommWaitAsyncError", handle, timeoutMs, asyncError);
}

sieveResult_t sieveCommGetCounters(sieveComm_t handle, sieveCounters_t* counters) {
  return sieve::GuardQuery(handle, "sieveCommGetCounters", [&]() -> sieve::Status {
    if (counters == nullptr) return sieve::Status::InvalidArgument("counters is NULL");
    std::shared_ptr<sieve::CommHandle> comm;
    SIEVE_RETURN_IF_ERROR(sieve::LookupComm(handle, &comm));
    // Counters are written by the background work: read them once it is done.
    sieve::Comm* impl = sieve::IdleImpl(handle);
    if (impl == nullptr)
      return sieve::Status::InvalidUsage(
          comm->Busy() ? "a non-blocking operation is in progress; poll sieveCommGetAsyncError first"
                       : "the communicator could not be created; destroy it");
    const sieve::Comm::Stats& s = impl->stats();
    counters->bytes_sent = s.traffic.sent;
    counters->bytes_received = s.traffic.received;
    counters->collectives = s.collectives;
    counters->masked_collectives = s.masked_collectives;
    counters->dense_fallbacks = s.dense_fallbacks;
    counters->mask_mismatches = s.mask_mismatches;
    counters->subnet_collectives = s.subnet_collectives;
    return sieve::Status::OK();
  });
}

}  // extern "C"
