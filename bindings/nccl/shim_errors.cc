// Errors and versions: the shim's last-error records, result and datatype conversions, and
// ncclGetVersion, ncclGetErrorString, ncclGetLastError, ncclCommGetAsyncError.
#include "shim_internal.h"

namespace sieve_nccl {

namespace {

thread_local std::string tls_last_error;

void Record(ncclComm_t comm, const char* message) {
  try {
    tls_last_error = message;
    if (ncclComm* live = Live(comm)) {
      std::lock_guard<std::mutex> lock(live->error_mu);
      live->last_error = message;
    }
  } catch (...) {
    // Out of memory while keeping a message: the result code still says what failed.
  }
}

}  // namespace

ncclResult_t Fail(ncclComm_t comm, ncclResult_t code, const char* call, const char* message) {
  try {
    Record(comm, (std::string(call) + ": " + message).c_str());
  } catch (...) {
    Record(comm, message);
  }
  return code;
}

ncclResult_t Unsupported(ncclComm_t comm, const char* call, const char* why) {
  try {
    std::string message = std::string("not supported by Sieve (libsieve-nccl.so): ") + why;
    return Fail(comm, ncclInvalidUsage, call, message.c_str());
  } catch (...) {
    return Fail(comm, ncclInvalidUsage, call, "not supported by Sieve");
  }
}

ncclResult_t FromSieve(ncclComm_t comm, sieveResult_t result) {
  // sieveInProgress (a non-blocking communicator's work was queued) is no failure.
  if (result != sieveSuccess && result != sieveInProgress) Record(comm, sieveGetLastError(nullptr));
  return static_cast<ncclResult_t>(result);
}

const char* ThreadLastError() { return tls_last_error.c_str(); }

ncclResult_t PollAsync(ncclComm* comm, sieveResult_t sieve_async) {
  std::lock_guard<std::mutex> lock(comm->serve_mu);
  if (comm->serve_pending && sieve_async == sieveSuccess) {
    comm->serve_pending = false;
    comm->serve_result = Serve(comm, "ncclCommGetAsyncError", comm->sieve);
  }
  if (sieve_async != sieveSuccess) return static_cast<ncclResult_t>(sieve_async);
  return comm->serve_result;
}

ncclResult_t ToSieveType(ncclComm_t comm, const char* call, ncclDataType_t datatype,
                         sieveDataType_t* out) {
  int value = RawEnum(datatype);
  if (value == ncclFloat8e4m3 || value == ncclFloat8e5m2) {
    return Fail(comm, ncclInvalidArgument, call,
                value == ncclFloat8e4m3 ? "datatype ncclFloat8e4m3 (10) is not supported by Sieve"
                                        : "datatype ncclFloat8e5m2 (11) is not supported by Sieve");
  }
  *out = EnumFromInt<sieveDataType_t>(value);
  return ncclSuccess;
}

size_t TypeSize(sieveDataType_t datatype) {
  switch (RawEnum(datatype)) {
    case sieveInt8:
    case sieveUint8:
      return 1;
    case sieveFloat16:
    case sieveBfloat16:
      return 2;
    case sieveInt32:
    case sieveUint32:
    case sieveFloat32:
      return 4;
    case sieveInt64:
    case sieveUint64:
    case sieveFloat64:
      return 8;
    default:
      return 0;
  }
}

}  // namespace sieve_nccl

using sieve_nccl::Fail;

extern "C" {

ncclResult_t ncclGetVersion(int* version) {
  if (version == nullptr)
    return Fail(nullptr, ncclInvalidArgument, "ncclGetVersion", "version is NULL");
  *version = NCCL_VERSION_CODE;  // the NCCL release whose ABI the shim serves
  return ncclSuccess;
}

const char* ncclGetErrorString(ncclResult_t result) {
  return sieveGetErrorString(sieve_nccl::EnumFromInt<sieveResult_t>(sieve_nccl::RawEnum(result)));
}

const char* ncclGetLastError(ncclComm_t comm) {
  ncclComm* live = sieve_nccl::Live(comm);
  if (live == nullptr) return sieve_nccl::ThreadLastError();
  std::lock_guard<std::mutex> lock(live->error_mu);
  return live->last_error.c_str();
}

// Sieve reads SIEVE_DEBUG at each communicator init, so there is no logging state to reload.
void ncclResetDebugInit(void) {}

ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* asyncError) {
  sieve_nccl::CallScope scope(comm);
  if (asyncError == nullptr)
    return Fail(comm, ncclInvalidArgument, "ncclCommGetAsyncError", "asyncError is NULL");
  sieveResult_t async = sieveSuccess;
  sieveResult_t r = sieveCommGetAsyncError(sieve_nccl::SieveOf(comm), &async);
  if (r != sieveSuccess) return sieve_nccl::FromSieve(comm, r);
  *asyncError = sieve_nccl::PollAsync(sieve_nccl::Live(comm), async);
  return ncclSuccess;
}

}  // extern "C"

SIEVE_NCCL_PROFILING_ALIAS(ncclGetVersion);
SIEVE_NCCL_PROFILING_ALIAS(ncclGetErrorString);
SIEVE_NCCL_PROFILING_ALIAS(ncclGetLastError);
SIEVE_NCCL_PROFILING_ALIAS(ncclResetDebugInit);
SIEVE_NCCL_PROFILING_ALIAS(ncclCommGetAsyncError);
