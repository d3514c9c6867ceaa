// Communicator lifecycle entry points: ids, init (explicit or from a
// launcher's environment), destroy and abort, rank/size queries.
#include <algorithm>
#include <chrono>
#include <cstring>
#include <thread>

#include "api/api_guard.h"
#include "api/arg_check.h"
#include "api/nonblocking.h"
#include "coll/hier.h"
#include "comm/bootstrap_config.h"
#include "plan/link_probe.h"
#include "core/log.h"
#include "transport/bootstrap/bootstrap.h"
#include "transport/bootstrap/unique_id.h"
#include "transport/tag.h"

using sieve::Comm;
using sieve::Config;
using sieve::Status;
using sieve::StrFormat;

namespace {

Status LoadAndMaybeDump(int rank, Config* config) {
  SIEVE_RETURN_IF_ERROR(sieve::LoadConfig(config));
  if (config->param_dump && rank == 0) sieve::LogRaw(sieve::DumpConfig(*config));
  return Status::OK();
}

Status CheckRankArgs(int nranks, int rank) {
  if (nranks < 1 || nranks >= sieve::transport::kMaxRanks)
    return Status::InvalidArgument(StrFormat("nranks %d is out of range", nranks));
  return sieve::CheckRank(rank, nranks, "rank");
}

// Joins the communicator on the calling thread (a non-blocking init's background thread).
Status CreateComm(const char id[128], int nranks, int rank, const Config& config,
                  const std::string& name, std::unique_ptr<Comm>* out) {
  sieve::SetLogRank(rank);
  if (!name.empty())
    SIEVE_INFO(sieve::kLogInit, "communicator \"%s\": rank %d of %d", name.c_str(), rank, nranks);
  std::unique_ptr<Comm> comm;
  SIEVE_RETURN_IF_ERROR(Comm::Create(id, nranks, rank, config, &comm));
  SIEVE_RETURN_IF_ERROR(sieve::coll::LearnHosts(*comm));
  SIEVE_RETURN_IF_ERROR(sieve::plan::ProbeLink(*comm));
  *out = std::move(comm);
  return Status::OK();
}

Status InitRank(sieveComm_t* out, int nranks, const char id[128], int rank, const Config& config,
                const sieve::CommOptions& options = {}) {
  if (out == nullptr) return Status::InvalidArgument("comm is NULL");
  if (Status args = CheckRankArgs(nranks, rank); !args.ok()) {
    // Tell the job's root (best effort, within the handshake deadline), so every other rank
    // fails now with this reason instead of waiting for a rank that will never come.
    sieve::transport::BootstrapTimeouts t = sieve::BootstrapTimeoutsOf(config);
    t.job_s = std::min(t.job_s, t.handshake_s);
    std::vector<sieve::transport::PeerInfo> ignored;
    Status told = sieve::transport::BootstrapExchange(id, rank, nranks, {}, t, &ignored);
    SIEVE_INFO(sieve::kLogBootstrap, "told the bootstrap root about rank %d of %d: %s", rank,
               nranks, told.ToString().c_str());
    return args;
  }
  if (options.blocking == 0) {
    std::shared_ptr<sieve::CommHandle> handle = sieve::NewPendingHandle(rank, nranks);
    std::string id_copy(id, SIEVE_UNIQUE_ID_BYTES);
    std::string name = options.name;
    sieve::CreateInBackground(
        handle->worker.get(), handle.get(), {handle->async},
        [id_copy, nranks, rank, config, name](std::unique_ptr<Comm>* created) {
          return CreateComm(id_copy.data(), nranks, rank, config, name, created);
        });
    *out = sieve::LiveComms().Publish(std::move(handle));
    return Status::InProgress("the communicator is being created in the background");
  }
  std::unique_ptr<Comm> impl;
  SIEVE_RETURN_IF_ERROR(CreateComm(id, nranks, rank, config, options.name, &impl));
  *out = sieve::NewReadyHandle(std::move(impl));
  return Status::OK();
}

// Frees the communicator of a handle already removed from the table (a later
// call with its value fails as not live); the handle itself goes with the
// last reference to it.
void Release(sieve::CommHandle* comm) {
  comm->live.store(nullptr);
  comm->impl.reset();
}

}  // namespace

extern "C" {

sieveResult_t sieveGetUniqueId(sieveUniqueId* uniqueId) {
  return sieve::Guard(nullptr, "sieveGetUniqueId", [&]() -> Status {
    if (uniqueId == nullptr) return Status::InvalidArgument("uniqueId is NULL");
    Config config;
    SIEVE_RETURN_IF_ERROR(sieve::LoadConfig(&config));
    return sieve::transport::StartBootstrapRoot(config.socket_ifname,
                                                sieve::BootstrapTimeoutsOf(config),
                                                uniqueId->internal);
  });
}

sieveResult_t sieveCommInitRank(sieveComm_t* comm, int nranks, sieveUniqueId commId, int rank) {
  return sieve::Guard(nullptr, "sieveCommInitRank", [&]() -> Status {
    Config config;
    SIEVE_RETURN_IF_ERROR(LoadAndMaybeDump(rank, &config));
    return InitRank(comm, nranks, commId.internal, rank, config);
  });
}

sieveResult_t sieveCommInitRankConfig(sieveComm_t* comm, int nranks, sieveUniqueId commId,
                                      int rank, const sieveConfig_t* config) {
  return sieve::Guard(nullptr, "sieveCommInitRankConfig", [&]() -> Status {
    sieve::CommOptions options;
    SIEVE_RETURN_IF_ERROR(sieve::ReadCommConfig(config, &options));
    Config loaded;
    SIEVE_RETURN_IF_ERROR(LoadAndMaybeDump(rank, &loaded));
    return InitRank(comm, nranks, commId.internal, rank, loaded, options);
  });
}

sieveResult_t sieveCommInitAll(sieveComm_t* comm, int ndev, const int* devlist) {
  return sieve::Guard(nullptr, "sieveCommInitAll", [&]() -> Status {
    return Status::InvalidUsage(
        "sieveCommInitAll (one process driving several devices) is not supported: NCCL's "
        "contract has one thread issue every rank's calls in a group, which Sieve cannot "
        "serve; start one process per rank (sieve-run) and use sieveCommInitRank");
  });
}

sieveResult_t sieveCommInitFromEnv(sieveComm_t* comm) {
  return sieve::Guard(nullptr, "sieveCommInitFromEnv", [&]() -> Status {
    sieve::LaunchEnv env;
    SIEVE_RETURN_IF_ERROR(sieve::ReadLaunchEnv(&env));
    Config config;
    SIEVE_RETURN_IF_ERROR(LoadAndMaybeDump(env.rank, &config));
    char id[SIEVE_UNIQUE_ID_BYTES];
    if (!env.unique_id_hex.empty()) {
      SIEVE_RETURN_IF_ERROR(sieve::transport::IdFromHex(env.unique_id_hex, id));
    } else {
      // MASTER_ADDR/MASTER_PORT: rank 0 hosts the root there; the key is derived from
      // SIEVE_BOOTSTRAP_SECRET (secret only when that is set).
      uint8_t secret[sieve::transport::kSecretBytes];
      sieve::transport::DeriveSecret(
          config.bootstrap_secret,
          StrFormat("sieve:%s:%d:%d", env.master_addr.c_str(), env.master_port, env.nranks),
          secret);
      if (config.bootstrap_secret.empty() && env.rank == 0) {
        SIEVE_INFO(sieve::kLogBootstrap,
                   "MASTER_ADDR/MASTER_PORT launch without SIEVE_BOOTSTRAP_SECRET: the bootstrap "
                   "key follows from the address and keeps only unrelated jobs apart");
      }
      if (env.rank == 0) {
        SIEVE_RETURN_IF_ERROR(sieve::transport::StartBootstrapRootAt(
            env.master_addr, env.master_port, secret, config.socket_ifname,
            sieve::BootstrapTimeoutsOf(config), id));
      } else {
        SIEVE_RETURN_IF_ERROR(
            sieve::transport::MakeUniqueId(env.master_addr, env.master_port, secret, id));
      }
    }
    SIEVE_INFO(sieve::kLogInit, "rank %d of %d from %s", env.rank, env.nranks, env.source.c_str());
    return InitRank(comm, env.nranks, id, env.rank, config);
  });
}

sieveResult_t sieveUniqueIdToString(const sieveUniqueId* id, char* str, size_t len) {
  return sieve::Guard(nullptr, "sieveUniqueIdToString", [&]() -> Status {
    if (id == nullptr || str == nullptr) return Status::InvalidArgument("id or str is NULL");
    if (len < SIEVE_UNIQUE_ID_STRING_BYTES)
      return Status::InvalidArgument(
          StrFormat("str holds %zu bytes; %d are needed", len, SIEVE_UNIQUE_ID_STRING_BYTES));
    std::string hex = sieve::transport::IdToHex(id->internal);
    std::memcpy(str, hex.c_str(), hex.size() + 1);
    return Status::OK();
  });
}

sieveResult_t sieveUniqueIdFromString(const char* str, sieveUniqueId* id) {
  return sieve::Guard(nullptr, "sieveUniqueIdFromString", [&]() -> Status {
    if (id == nullptr || str == nullptr) return Status::InvalidArgument("id or str is NULL");
    return sieve::transport::IdFromHex(str, id->internal);
  });
}

}  // extern "C"

namespace {

// Sets the abort flag; a call blocked in another thread sees it, fails and
// leaves. Waits (until `deadline`) for such calls so the communicator is freed after.
void AbortCalls(Comm* impl, std::chrono::steady_clock::time_point deadline) {
  impl->RequestAbort();
  while (impl->active_calls().load() > 0 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

std::chrono::steady_clock::time_point AbortDeadline() {
  return std::chrono::steady_clock::now() + std::chrono::milliseconds(4500);
}

// Rank or size for Count/UserRank: the communicator's, or while a non-blocking
// init runs the ones it was given (a split's are known only when it is done).
Status RankOrSize(const sieveComm_t handle, bool want_rank, int* out) {
  std::shared_ptr<sieve::CommHandle> comm;
  SIEVE_RETURN_IF_ERROR(sieve::LookupComm(handle, &comm));
  if (Comm* impl = comm->Impl()) {
    *out = want_rank ? impl->rank() : impl->size();
    return Status::OK();
  }
  int pending = want_rank ? comm->pending_rank : comm->pending_size;
  if (pending >= 0 && comm->Busy()) {
    *out = pending;
    return Status::OK();
  }
  return Status::InvalidUsage(
      comm->Busy() ? "the communicator is still being created by a non-blocking split; poll "
                     "sieveCommGetAsyncError until it is ready"
                   : "the communicator could not be created (see sieveGetLastError); destroy it");
}

}  // namespace

extern "C" {

sieveResult_t sieveCommDestroy(sieveComm_t handle) {
  // Removed first: of two threads destroying it, the second is told it is not live.
  std::shared_ptr<sieve::CommHandle> owned;
  Status removed = sieve::LiveComms().Remove(handle, &owned);
  if (!removed.ok()) return sieve::Guard(nullptr, "sieveCommDestroy", [&] { return removed; });
  sieve::CommHandle* comm = owned.get();
  // A non-blocking communicator's queued work completes (or fails) first.
  sieve::FinishBackground(comm);
  // Work still in flight in another thread: it cannot complete once we are
  // gone, so it is aborted rather than waited for.
  Comm* impl = comm->Impl();
  if (impl != nullptr && impl->active_calls().load() > 0) AbortCalls(impl, AbortDeadline());
  Release(comm);
  return sieveSuccess;
}

sieveResult_t sieveCommAbort(sieveComm_t handle) {
  std::shared_ptr<sieve::CommHandle> owned;
  if (!sieve::LiveComms().Remove(handle, &owned).ok()) return sieveSuccess;
  sieve::CommHandle* comm = owned.get();
  auto deadline = AbortDeadline();
  double left = std::chrono::duration<double>(deadline - std::chrono::steady_clock::now()).count();
  bool background_done = sieve::AbandonBackground(comm, left);
  if (Comm* impl = comm->Impl()) AbortCalls(impl, deadline);
  if (!background_done && comm->impl) {
    // Background work ignored the abort past the deadline and still uses the
    // communicator: leak it rather than free it under that thread.
    SIEVE_WARN("sieveCommAbort: background work still running after %.1f s; leaving its "
               "communicator allocated",
               4.5);
    comm->live.store(nullptr);
    (void)comm->impl.release();
  }
  Release(comm);
  return sieveSuccess;
}

sieveResult_t sieveCommCount(const sieveComm_t comm, int* count) {
  // The communicator's last error says why this call failed (IdleImpl: null when not live).
  return sieve::Guard(sieve::IdleImpl(comm), "sieveCommCount", [&]() -> Status {
    if (count == nullptr) return Status::InvalidArgument("count is NULL");
    return RankOrSize(comm, false, count);
  });
}

sieveResult_t sieveCommUserRank(const sieveComm_t comm, int* rank) {
  return sieve::Guard(sieve::IdleImpl(comm), "sieveCommUserRank", [&]() -> Status {
    if (rank == nullptr) return Status::InvalidArgument("rank is NULL");
    return RankOrSize(comm, true, rank);
  });
}

}  // extern "C"
