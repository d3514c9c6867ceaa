// Communicator lifecycle: ncclGetUniqueId, the ncclCommInit* family, ncclCommSplit, Shrink,
// Revoke, Finalize, Destroy, Abort and the rank/size/device queries. Each ncclComm_t wraps one sieveComm_t.
#include <chrono>
#include <new>
#include <thread>

#include "shim_internal.h"

using sieve_nccl::Fail;
using sieve_nccl::FromSieve;
using sieve_nccl::Live;
using sieve_nccl::SieveOf;

namespace {

// NCCL rejects a config that was not set from NCCL_CONFIG_INITIALIZER; so does the shim. Of its
// fields Sieve uses `blocking` (0: a non-blocking communicator, as NCCL defines it: init and
// split return ncclInProgress and ncclCommGetAsyncError reports ncclInProgress until it is
// ready; collectives on host buffers likewise) and `commName`; the others tune GPU resources
// Sieve does not use. Writes the Sieve config to *out.
ncclResult_t ToSieveConfig(const char* call, const ncclConfig_t* config, sieveConfig_t* out) {
  *out = SIEVE_CONFIG_INITIALIZER;
  if (config == nullptr) return ncclSuccess;
  if (config->magic != SIEVE_NCCL_CONFIG_MAGIC)
    return Fail(nullptr, ncclInvalidArgument, call,
                "config was not initialized with NCCL_CONFIG_INITIALIZER (bad magic)");
  // NCCL_CONFIG_UNDEF_INT and SIEVE_CONFIG_UNDEF_INT are both INT_MIN: "the default".
  out->blocking = config->blocking;
  out->commName = config->commName;
  return ncclSuccess;
}

// Wraps a new Sieve communicator: a ready one is served now (on failure it is destroyed); one
// still in progress (non-blocking) when ncclCommGetAsyncError first finds it ready.
ncclResult_t Wrap(const char* call, sieveComm_t sieve, bool in_progress, ncclComm_t* out) {
  if (!in_progress) {
    ncclResult_t served = sieve_nccl::Serve(nullptr, call, sieve);
    if (served != ncclSuccess) {
      sieveCommDestroy(sieve);
      return served;
    }
  }
  ncclComm* comm = new (std::nothrow) ncclComm;
  if (comm == nullptr) {
    if (in_progress)
      sieveCommAbort(sieve);
    else
      sieveCommDestroy(sieve);
    return Fail(nullptr, ncclSystemError, call, "out of memory");
  }
  comm->sieve = sieve;
  comm->serve_pending = in_progress;
  *out = comm;
  return in_progress ? ncclInProgress : ncclSuccess;
}

ncclResult_t InitRank(const char* call, ncclComm_t* comm, int nranks, const ncclUniqueId& id,
                      int rank, const ncclConfig_t* config) {
  if (comm == nullptr) return Fail(nullptr, ncclInvalidArgument, call, "comm is NULL");
  *comm = nullptr;
  sieveConfig_t sieve_config;
  ncclResult_t checked = ToSieveConfig(call, config, &sieve_config);
  if (checked != ncclSuccess) return checked;
  sieveUniqueId sieve_id;
  static_assert(sizeof sieve_id.internal == sizeof id.internal, "ids are 128 bytes");
  std::memcpy(sieve_id.internal, id.internal, sizeof sieve_id.internal);
  sieveComm_t sieve = nullptr;
  sieveResult_t r = sieveCommInitRankConfig(&sieve, nranks, sieve_id, rank, &sieve_config);
  if (r != sieveSuccess && r != sieveInProgress) return FromSieve(nullptr, r);
  return Wrap(call, sieve, r == sieveInProgress, comm);
}

// Frees the wrapper once no shim call uses it (bounded: a wrapper still in use is kept).
void Release(ncclComm* comm) {
  comm->magic = 0;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (comm->active_calls.load() > 0 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  if (comm->active_calls.load() == 0) delete comm;
}

}  // namespace

namespace sieve_nccl {

ncclResult_t Serve(ncclComm_t record_on, const char* call, sieveComm_t sieve) {
  const char* mode = nullptr;
  sieveResult_t r = sieveCommServeNccl(sieve, &mode);
  if (r != sieveSuccess) return FromSieve(record_on, r);
  // Sieve validated the mode at init; a mode this shim predates is refused.
  static const char* const kModes[] = {"dense", "auto-mask", "ternary", "auto-mask+ternary",
                                       "auto"};
  bool known = false;
  for (const char* m : kModes) known |= std::strcmp(mode, m) == 0;
  if (!known)
    return Fail(record_on, ncclInvalidUsage, call,
                "SIEVE_NCCL_MODE: a mode this shim does not know");
  return ncclSuccess;
}

}  // namespace sieve_nccl

extern "C" {

ncclResult_t ncclGetUniqueId(ncclUniqueId* uniqueId) {
  if (uniqueId == nullptr)
    return Fail(nullptr, ncclInvalidArgument, "ncclGetUniqueId", "uniqueId is NULL");
  sieveUniqueId id;
  sieveResult_t r = sieveGetUniqueId(&id);
  if (r == sieveSuccess) std::memcpy(uniqueId->internal, id.internal, sizeof id.internal);
  return FromSieve(nullptr, r);
}

ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank) {
  return InitRank("ncclCommInitRank", comm, nranks, commId, rank, nullptr);
}

ncclResult_t ncclCommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank,
                                    ncclConfig_t* config) {
  return InitRank("ncclCommInitRankConfig", comm, nranks, commId, rank, config);
}

// Several ids only speed up NCCL's bootstrap; Sieve joins every rank through the first one.
ncclResult_t ncclCommInitRankScalable(ncclComm_t* newcomm, int nranks, int myrank, int nId,
                                      ncclUniqueId* commIds, ncclConfig_t* config) {
  const char* call = "ncclCommInitRankScalable";
  if (nId < 1 || commIds == nullptr)
    return Fail(nullptr, ncclInvalidArgument, call, "nId must be >= 1 and commIds not NULL");
  return InitRank(call, newcomm, nranks, commIds[0], myrank, config);
}

ncclResult_t ncclCommInitAll(ncclComm_t* comm, int ndev, const int* devlist) {
  return FromSieve(nullptr, sieveCommInitAll(nullptr, ndev, devlist));
}

ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t* newcomm,
                           ncclConfig_t* config) {
  sieve_nccl::CallScope scope(comm);
  const char* call = "ncclCommSplit";
  if (newcomm == nullptr) return Fail(comm, ncclInvalidArgument, call, "newcomm is NULL");
  *newcomm = nullptr;
  sieveConfig_t sieve_config;
  ncclResult_t checked = ToSieveConfig(call, config, &sieve_config);
  if (checked != ncclSuccess) return checked;
  sieveComm_t sieve = nullptr;
  sieveResult_t r = sieveCommSplitConfig(SieveOf(comm), color, key, &sieve, &sieve_config);
  if (r != sieveSuccess && r != sieveInProgress) return FromSieve(comm, r);
  if (sieve == nullptr) return static_cast<ncclResult_t>(r);  // NCCL_SPLIT_NOCOLOR
  return Wrap(call, sieve, r == sieveInProgress, newcomm);
}

// Sieve's shrink (docs/membership.md) behind NCCL's: NCCL_SHRINK_ABORT is SIEVE_SHRINK_ABORT;
// a NULL config (or blocking undefined) inherits the parent's blocking mode, as in NCCL.
ncclResult_t ncclCommShrink(ncclComm_t comm, int* excludeRanksList, int excludeRanksCount,
                            ncclComm_t* newcomm, ncclConfig_t* config, int shrinkFlags) {
  static_assert(NCCL_SHRINK_DEFAULT == SIEVE_SHRINK_DEFAULT && NCCL_SHRINK_ABORT == SIEVE_SHRINK_ABORT,
                "shrink flags have NCCL's values");
  sieve_nccl::CallScope scope(comm);
  const char* call = "ncclCommShrink";
  if (newcomm == nullptr) return Fail(comm, ncclInvalidArgument, call, "newcomm is NULL");
  *newcomm = nullptr;
  sieveConfig_t sieve_config;
  ncclResult_t checked = ToSieveConfig(call, config, &sieve_config);
  if (checked != ncclSuccess) return checked;
  sieveComm_t sieve = nullptr;
  sieveResult_t r = sieveCommShrink(SieveOf(comm), excludeRanksList, excludeRanksCount, &sieve,
                                    &sieve_config, shrinkFlags);
  if (r != sieveSuccess && r != sieveInProgress) return FromSieve(comm, r);
  return Wrap(call, sieve, r == sieveInProgress, newcomm);
}

// May be called from another thread while a call on comm is blocked (it makes that call return).
ncclResult_t ncclCommRevoke(ncclComm_t comm, int revokeFlags) {
  static_assert(NCCL_REVOKE_DEFAULT == SIEVE_REVOKE_DEFAULT, "revoke flags have NCCL's values");
  sieve_nccl::CallScope scope(comm);
  return FromSieve(comm, sieveCommRevoke(SieveOf(comm), revokeFlags));
}

// Blocking communicators complete every operation before the call that issued it returns, so
// nothing is pending; a non-blocking one reports ncclInProgress while its work runs (poll
// ncclCommGetAsyncError, as NCCL's non-blocking contract asks).
ncclResult_t ncclCommFinalize(ncclComm_t comm) {
  sieve_nccl::CallScope scope(comm);
  sieveResult_t async = sieveSuccess;
  sieveResult_t r = sieveCommGetAsyncError(SieveOf(comm), &async);
  if (r != sieveSuccess) return FromSieve(comm, r);
  return async == sieveInProgress ? ncclInProgress : ncclSuccess;
}

ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  ncclComm* live = Live(comm);
  if (live == nullptr)
    return Fail(nullptr, ncclInvalidArgument, "ncclCommDestroy", "comm is not a live communicator");
  ncclResult_t result = FromSieve(nullptr, sieveCommDestroy(live->sieve));
  Release(live);
  return result;
}

ncclResult_t ncclCommAbort(ncclComm_t comm) {
  ncclComm* live = Live(comm);
  if (live == nullptr) return ncclSuccess;
  sieveCommAbort(live->sieve);  // makes calls blocked in other threads return
  Release(live);
  return ncclSuccess;
}

ncclResult_t ncclCommCount(const ncclComm_t comm, int* count) {
  sieve_nccl::CallScope scope(comm);
  return FromSieve(comm, sieveCommCount(SieveOf(comm), count));
}

ncclResult_t ncclCommUserRank(const ncclComm_t comm, int* rank) {
  sieve_nccl::CallScope scope(comm);
  return FromSieve(comm, sieveCommUserRank(SieveOf(comm), rank));
}

// Sieve communicators are bound to no CUDA device: each call's buffers are classified (host or
// device) and device work goes on the caller's stream, whatever device that is. Answering 0
// would name a device the communicator never chose.
ncclResult_t ncclCommCuDevice(const ncclComm_t comm, int* device) {
  return sieve_nccl::Unsupported(
      comm, "ncclCommCuDevice",
      "Sieve communicators are bound to no CUDA device (each call's buffers are detected as "
      "host or device memory and device work runs on the caller's stream)");
}

}  // extern "C"

SIEVE_NCCL_PROFILING_ALIAS(ncclGetUniqueId);
SIEVE_NCCL_PROFILING_ALIAS(ncclCommInitRank);
SIEVE_NCCL_PROFILING_ALIAS(ncclCommInitRankConfig);
SIEVE_NCCL_PROFILING_ALIAS(ncclCommInitRankScalable);
SIEVE_NCCL_PROFILING_ALIAS(ncclCommInitAll);
SIEVE_NCCL_PROFILING_ALIAS(ncclCommSplit);
SIEVE_NCCL_PROFILING_ALIAS(ncclCommShrink);
SIEVE_NCCL_PROFILING_ALIAS(ncclCommRevoke);
SIEVE_NCCL_PROFILING_ALIAS(ncclCommFinalize);
SIEVE_NCCL_PROFILING_ALIAS(ncclCommDestroy);
SIEVE_NCCL_PROFILING_ALIAS(ncclCommAbort);
SIEVE_NCCL_PROFILING_ALIAS(ncclCommCount);
SIEVE_NCCL_PROFILING_ALIAS(ncclCommUserRank);
SIEVE_NCCL_PROFILING_ALIAS(ncclCommCuDevice);
