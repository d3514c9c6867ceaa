// What the shim's files share: the ncclComm handle (a wrapper around one sieveComm_t), the
// error records behind ncclGetLastError, datatype/enum conversions and the pnccl alias macro.
#ifndef SIEVE_BINDINGS_NCCL_SHIM_INTERNAL_H_
#define SIEVE_BINDINGS_NCCL_SHIM_INTERNAL_H_

#include <atomic>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <string>

#include "nccl_abi.h"
#include "sieve.h"

constexpr uint64_t kShimCommMagic = 0x4e43434c53484d21ull;  // "NCCLSHM!"

// The object behind ncclComm_t. Every NCCL communicator the shim hands out is served by Sieve.
struct ncclComm {
  uint64_t magic = kShimCommMagic;
  sieveComm_t sieve = nullptr;
  // Shim calls in flight on this handle: ncclCommAbort waits for them before freeing it.
  std::atomic<int> active_calls{0};
  std::mutex error_mu;
  std::string last_error;  // guarded by error_mu
  // A non-blocking communicator learns that it serves NCCL (sieveCommServeNccl) once it is
  // ready: at the first ncclCommGetAsyncError that finds it so. serve_result is what that gave.
  std::mutex serve_mu;
  bool serve_pending = false;           // guarded by serve_mu
  ncclResult_t serve_result = ncclSuccess;  // guarded by serve_mu
};

namespace sieve_nccl {

// comm when it is a live shim communicator, else nullptr (NULL, destroyed or foreign).
inline ncclComm* Live(ncclComm_t comm) {
  return comm != nullptr && comm->magic == kShimCommMagic ? comm : nullptr;
}
// The Sieve communicator behind comm, or NULL (Sieve then reports the bad handle).
inline sieveComm_t SieveOf(ncclComm_t comm) {
  ncclComm* live = Live(comm);
  return live != nullptr ? live->sieve : nullptr;
}

// Counts a call on comm for its duration, so an abort from another thread frees the handle
// only once no shim code still uses it.
class CallScope {
 public:
  explicit CallScope(ncclComm_t comm) : comm_(Live(comm)) {
    if (comm_ != nullptr) comm_->active_calls.fetch_add(1);
  }
  ~CallScope() {
    if (comm_ != nullptr) comm_->active_calls.fetch_sub(1);
  }
  CallScope(const CallScope&) = delete;
  CallScope& operator=(const CallScope&) = delete;

 private:
  ncclComm* comm_;
};

// Tells Sieve the communicator serves NCCL (Sieve logs "Sieve serving NCCL calls" at INFO) and
// checks the mode is one this shim knows; a failure is recorded on record_on (may be NULL).
ncclResult_t Serve(ncclComm_t record_on, const char* call, sieveComm_t sieve);
// Serves a non-blocking communicator once it is ready (see ncclComm::serve_pending) and returns
// its state for ncclCommGetAsyncError: ncclInProgress until then, afterwards Sieve's async error
// or the serving's failure.
ncclResult_t PollAsync(ncclComm* comm, sieveResult_t sieve_async);

// Records a failure found by the shim itself ("<call>: <message>") as the calling thread's
// last error and, when comm is live, as comm's; returns code. Never throws.
ncclResult_t Fail(ncclComm_t comm, ncclResult_t code, const char* call, const char* message);
// An entry point Sieve does not provide: ncclInvalidUsage with a message saying so.
ncclResult_t Unsupported(ncclComm_t comm, const char* call, const char* why);
// Maps a Sieve result to NCCL's (same numbers); on failure copies Sieve's message into the
// shim's records so ncclGetLastError returns it.
ncclResult_t FromSieve(ncclComm_t comm, sieveResult_t result);
// The thread's and a communicator's last error, for ncclGetLastError.
const char* ThreadLastError();

// Reads a C enum argument as int without loading an out-of-range enum value.
template <typename E>
int RawEnum(const E& e) {
  static_assert(sizeof(E) == sizeof(int), "C enums are int-sized");
  int v;
  std::memcpy(&v, &e, sizeof v);
  return v;
}
template <typename To>
To EnumFromInt(int v) {
  static_assert(sizeof(To) == sizeof(int), "C enums are int-sized");
  To out;
  std::memcpy(&out, &v, sizeof out);
  return out;
}

// The Sieve datatype for an NCCL one. The fp8 types (which Sieve lacks) fail with
// ncclInvalidArgument and a message; other values pass through for Sieve to check.
ncclResult_t ToSieveType(ncclComm_t comm, const char* call, ncclDataType_t datatype,
                         sieveDataType_t* out);
// Bytes per element of a datatype Sieve accepts; 0 for any other value.
size_t TypeSize(sieveDataType_t datatype);

}  // namespace sieve_nccl

// Defines pnccl<name> as a second symbol for nccl<name> (the NCCL profiling interface).
// REQUIRES: nccl<name> is defined earlier in the same file.
#define SIEVE_NCCL_PROFILING_ALIAS(name) \
  extern "C" decltype(name) p##name __attribute__((alias(#name)))

#endif  // SIEVE_BINDINGS_NCCL_SHIM_INTERNAL_H_
