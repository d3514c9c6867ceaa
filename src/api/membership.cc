// Elastic membership entry points (DESIGN.md 1.7, docs/membership.md): revoke, shrink, grow,
// and which ranks failed. They check arguments and call comm/membership.h; a shrink's or grow's
// new communicator is made like a split's (blocking, or on its own background thread).
#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "api/api_guard.h"
#include "api/arg_check.h"
#include "api/nonblocking.h"
#include "coll/collectives.h"
#include "coll/hier.h"
#include "comm/bootstrap_config.h"
#include "comm/membership.h"
#include "core/log.h"
#include "transport/bootstrap/bootstrap.h"
#include "transport/tag.h"

using sieve::Comm;
using sieve::Status;
using sieve::StrFormat;

namespace {

// How long a revoke waits for the calls it stopped (as sieveCommAbort).
constexpr double kRevokeWaitS = 4.5;
// The agreement's wait for a silent rank once some rank's failure was a stall.
constexpr double kStallGraceS = 1.0;

// Counts the caller as a call on `comm` for its duration, so destroy and abort from another
// thread wait for it; never refused (revoke is meant for another thread than the blocked one).
class CallCount {
 public:
  explicit CallCount(Comm* comm) : comm_(comm) { comm_->active_calls().fetch_add(1); }
  ~CallCount() { comm_->active_calls().fetch_sub(1); }
  CallCount(const CallCount&) = delete;
  CallCount& operator=(const CallCount&) = delete;

 private:
  Comm* comm_;
};

Status Revoke(sieveComm_t handle) {
  // One revoke at a time per process: EndRevoke frees the device engine.
  static std::mutex revoke_mu;
  std::shared_ptr<sieve::CommHandle> h;
  SIEVE_RETURN_IF_ERROR(sieve::LookupComm(handle, &h));
  Comm* impl = h->Impl();
  if (impl == nullptr)
    return Status::InvalidUsage(
        h->Busy() ? "the communicator is still being created; abort it instead"
                  : "the communicator could not be created; destroy it");
  std::lock_guard<std::mutex> lock(revoke_mu);
  CallCount count(impl);
  impl->BeginRevoke();
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(kRevokeWaitS);
  while ((impl->active_calls().load() > 1 || h->Busy()) &&
         std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  if (impl->active_calls().load() > 1 || h->Busy())
    return Status::RemoteError(StrFormat(
        "calls on the communicator were still running %.1f s after the revoke; it stays revoked "
        "and aborting: destroy or abort it",
        kRevokeWaitS));
  impl->EndRevoke();
  SIEVE_INFO(sieve::kLogInit, "communicator revoked; quiescent");
  return Status::OK();
}

// The communicator behind `handle` for a membership call: it may have failed or been revoked,
// but must exist and have nothing in progress.
Status MembershipComm(sieveComm_t handle, std::shared_ptr<sieve::CommHandle>* h, Comm** impl) {
  SIEVE_RETURN_IF_ERROR(sieve::LookupComm(handle, h));
  if ((*h)->Busy())
    return Status::InvalidUsage(
        "a non-blocking operation on this communicator is still in progress; poll "
        "sieveCommGetAsyncError until it no longer returns sieveInProgress (or pass "
        "SIEVE_SHRINK_ABORT)");
  *impl = (*h)->Impl();
  if (*impl == nullptr) return Status::InvalidUsage("the communicator could not be created; destroy it");
  return Status::OK();
}

// The exclude list checked and sorted.
Status CheckExclude(const Comm& comm, const int* list, int count, std::vector<int>* out) {
  if (count < 0) return Status::InvalidArgument(StrFormat("excludeRanksCount %d is negative", count));
  if (count > 0 && list == nullptr)
    return Status::InvalidArgument(StrFormat("excludeRanksList is NULL with count %d", count));
  out->assign(list, list + count);
  std::sort(out->begin(), out->end());
  for (size_t i = 0; i < out->size(); ++i) {
    int r = (*out)[i];
    SIEVE_RETURN_IF_ERROR(sieve::CheckRank(r, comm.size(), "excluded rank"));
    if (i > 0 && (*out)[i - 1] == r)
      return Status::InvalidArgument(StrFormat("rank %d is listed twice in excludeRanksList", r));
    if (r == comm.rank())
      return Status::InvalidArgument(StrFormat(
          "this rank (%d) is in its own exclude list: excluded ranks do not call sieveCommShrink",
          r));
  }
  return Status::OK();
}

// Finishes a new communicator of a shrink or grow: host layout learned anew.
Status Finish(std::unique_ptr<Comm> comm, const char* how, std::unique_ptr<Comm>* out) {
  sieve::SetLogRank(comm->rank());
  SIEVE_RETURN_IF_ERROR(sieve::coll::LearnHosts(*comm));
  SIEVE_INFO(sieve::kLogInit, "%s: rank %d of %d", how, comm->rank(), comm->size());
  *out = std::move(comm);
  return Status::OK();
}

Status Shrink(Comm& parent, const std::vector<int>& exclude, std::unique_ptr<Comm>* out) {
  sieve::membership::ShrinkPlan plan;
  // After device work queued on the parent (its engine drives the same transport).
  SIEVE_RETURN_IF_ERROR(
      parent.RunInOrder([&] { return sieve::membership::PlanShrink(parent, exclude, &plan); }));
  std::unique_ptr<Comm> comm;
  SIEVE_RETURN_IF_ERROR(sieve::membership::JoinNew(plan.id, plan.new_size, plan.new_rank,
                                                   parent.config(), parent.serial(), &comm));
  return Finish(std::move(comm), "shrink", out);
}

// Gathers count int32 values per rank over the parent (rank r's at r * count).
Status GatherInts(Comm& parent, const int32_t* mine, size_t count, std::vector<int32_t>* all) {
  all->assign(count * static_cast<size_t>(parent.size()), 0);
  sieve::coll::CollArgs args;
  args.send = mine;
  args.recv = all->data();
  args.count = count;
  args.dtype = sieve::kernels::DType::kInt32;
  return sieve::coll::AllGather(parent, args);
}

// The existing ranks' side of a grow: agree (in the parent's sequence) on the new size and on
// which rank holds the id, take the id from it, and join with the same ranks.
// `id` is the grow id on the rank that made it, empty on the others.
Status GrowMember(Comm& parent, int nranks, const std::string& id, std::unique_ptr<Comm>* out) {
  const int32_t mine[2] = {nranks, id.empty() ? 0 : 1};
  std::vector<int32_t> all;
  SIEVE_RETURN_IF_ERROR(parent.RunInOrder([&] { return GatherInts(parent, mine, 2, &all); }));
  std::string sizes, holders;
  int root = -1, nholders = 0;
  for (int r = 0; r < parent.size(); ++r) {
    if (all[2 * r] != nranks) sizes += StrFormat("%s rank %d passed %d", sizes.empty() ? "" : ",", r, all[2 * r]);
    if (all[2 * r + 1] != 0) {
      holders += StrFormat("%s%d", holders.empty() ? "" : ", ", r);
      root = r;
      ++nholders;
    }
  }
  if (!sizes.empty())
    return Status::InvalidUsage(
        StrFormat("the ranks disagree on the grown size: this rank passed %d;%s", nranks, sizes.c_str()));
  if (nholders != 1)
    return Status::InvalidUsage(
        nholders == 0
            ? std::string("no rank passed the grow id: exactly one rank passes the id it got from "
                          "sieveCommGetUniqueId, the others NULL")
            : StrFormat("ranks %s each passed an id: exactly one rank passes it, the others NULL",
                        holders.c_str()));
  char grow_id[SIEVE_UNIQUE_ID_BYTES] = {};
  if (!id.empty()) std::memcpy(grow_id, id.data(), sizeof(grow_id));
  sieve::coll::CollArgs args;
  args.send = grow_id;
  args.recv = grow_id;
  args.count = sizeof(grow_id);
  args.dtype = sieve::kernels::DType::kUint8;
  args.root = root;
  SIEVE_RETURN_IF_ERROR(parent.RunInOrder([&] { return sieve::coll::Broadcast(parent, args); }));
  if (parent.rank() == root) parent.grow_id_pending() = false;  // consumed, whatever follows
  std::unique_ptr<Comm> comm;
  SIEVE_RETURN_IF_ERROR(sieve::membership::JoinNew(grow_id, nranks, parent.rank(), parent.config(),
                                                   parent.serial(), &comm));
  return Finish(std::move(comm), "grow", out);
}

// Makes a child of `parent` with `make`: now (blocking) or on the child's own background thread
// (the parent is then in progress until it is done), as a split does.
Status MakeChild(sieve::CommHandle* parent_handle, Comm* parent, const sieveConfig_t* config,
                 const char* call, sieve::CreateFn make, sieveComm_t* newcomm) {
  sieve::CommOptions options;
  SIEVE_RETURN_IF_ERROR(sieve::ReadCommConfig(config, &options));
  bool blocking = options.blocking == SIEVE_CONFIG_UNDEF_INT ? parent_handle->worker == nullptr
                                                             : options.blocking != 0;
  if (!options.name.empty())
    SIEVE_INFO(sieve::kLogInit, "%s into communicator \"%s\"", call, options.name.c_str());
  if (blocking) {
    std::unique_ptr<Comm> created;
    SIEVE_RETURN_IF_ERROR(make(&created));
    *newcomm = sieve::NewReadyHandle(std::move(created));
    return Status::OK();
  }
  std::shared_ptr<sieve::CommHandle> child = sieve::NewPendingHandle(-1, -1);
  sieve::CreateInBackground(
      child->worker.get(), child.get(), {parent_handle->async, child->async},
      [parent, call, make](std::unique_ptr<Comm>* created) {
        CallCount count(parent);  // an abort of the parent waits for this
        Status st = make(created);
        if (!st.ok()) parent->RecordError(st.WithContext(call));
        return st;
      });
  *newcomm = sieve::LiveComms().Publish(std::move(child));
  return Status::InProgress(StrFormat("the %s runs in the background", call));
}

Status WriteRanks(const std::vector<int>& failed, int* ranks, int max_ranks, int* nfailed) {
  if (nfailed == nullptr) return Status::InvalidArgument("nFailed is NULL");
  if (max_ranks < 0) return Status::InvalidArgument(StrFormat("maxRanks %d is negative", max_ranks));
  if (max_ranks > 0 && ranks == nullptr)
    return Status::InvalidArgument(StrFormat("ranks is NULL with maxRanks %d", max_ranks));
  *nfailed = static_cast<int>(failed.size());
  std::copy_n(failed.begin(), std::min(failed.size(), static_cast<size_t>(max_ranks)), ranks);
  return Status::OK();
}

}  // namespace

extern "C" {

sieveResult_t sieveCommRevoke(sieveComm_t comm, int revokeFlags) {
  // Not refused while another thread is in a call: stopping that call is what it is for.
  return sieve::Guard(nullptr, "sieveCommRevoke", [&]() -> Status {
    if (revokeFlags != SIEVE_REVOKE_DEFAULT)
      return Status::InvalidArgument(
          StrFormat("revokeFlags is %d; it must be SIEVE_REVOKE_DEFAULT (0)", revokeFlags));
    return Revoke(comm);
  });
}

sieveResult_t sieveCommShrink(sieveComm_t comm, const int* excludeRanksList, int excludeRanksCount,
                              sieveComm_t* newcomm, const sieveConfig_t* config, int shrinkFlags) {
  if (shrinkFlags == SIEVE_SHRINK_ABORT) {
    // First stop what runs on the parent (other threads' calls, background work).
    sieveResult_t revoked = sieve::Guard(nullptr, "sieveCommShrink", [&] { return Revoke(comm); });
    if (revoked != sieveSuccess) return revoked;
  }
  return sieve::Guard(sieve::IdleImpl(comm), "sieveCommShrink", [&]() -> Status {
    if (shrinkFlags != SIEVE_SHRINK_DEFAULT && shrinkFlags != SIEVE_SHRINK_ABORT)
      return Status::InvalidArgument(StrFormat(
          "shrinkFlags is %d; it is SIEVE_SHRINK_DEFAULT (0) or SIEVE_SHRINK_ABORT (1)",
          shrinkFlags));
    if (newcomm == nullptr) return Status::InvalidArgument("newcomm is NULL");
    *newcomm = nullptr;
    std::shared_ptr<sieve::CommHandle> parent;
    Comm* impl = nullptr;
    SIEVE_RETURN_IF_ERROR(MembershipComm(comm, &parent, &impl));
    std::vector<int> exclude;
    SIEVE_RETURN_IF_ERROR(CheckExclude(*impl, excludeRanksList, excludeRanksCount, &exclude));
    return MakeChild(parent.get(), impl, config, "sieveCommShrink",
                     [impl, exclude](std::unique_ptr<Comm>* out) {
                       return Shrink(*impl, exclude, out);
                     },
                     newcomm);
  });
}

sieveResult_t sieveCommGetFailedRanks(sieveComm_t comm, int* ranks, int maxRanks, int* nFailed) {
  return sieve::Guard(sieve::IdleImpl(comm), "sieveCommGetFailedRanks", [&]() -> Status {
    std::shared_ptr<sieve::CommHandle> h;
    Comm* impl = nullptr;
    SIEVE_RETURN_IF_ERROR(MembershipComm(comm, &h, &impl));
    return WriteRanks(sieve::membership::LocallyFailed(*impl), ranks, maxRanks, nFailed);
  });
}

sieveResult_t sieveCommAgreeFailedRanks(sieveComm_t comm, int* ranks, int maxRanks, int* nFailed) {
  return sieve::Guard(sieve::IdleImpl(comm), "sieveCommAgreeFailedRanks", [&]() -> Status {
    std::shared_ptr<sieve::CommHandle> h;
    Comm* impl = nullptr;
    SIEVE_RETURN_IF_ERROR(MembershipComm(comm, &h, &impl));
    SIEVE_RETURN_IF_ERROR(WriteRanks({}, ranks, maxRanks, nFailed));  // arguments first
    std::vector<int> failed;
    SIEVE_RETURN_IF_ERROR(impl->RunInOrder(
        [&] { return sieve::membership::AgreeFailed(*impl, kStallGraceS, &failed); }));
    return WriteRanks(failed, ranks, maxRanks, nFailed);
  });
}

sieveResult_t sieveCommGetUniqueId(sieveComm_t comm, sieveUniqueId* uniqueId) {
  return sieve::Guard(sieve::IdleImpl(comm), "sieveCommGetUniqueId", [&]() -> Status {
    Comm* impl = nullptr;
    SIEVE_RETURN_IF_ERROR(sieve::CheckComm(comm, &impl));
    if (uniqueId == nullptr) return Status::InvalidArgument("uniqueId is NULL");
    if (impl->grow_id_pending())
      return Status::InvalidUsage(
          "an id from sieveCommGetUniqueId on this communicator has not been used by a "
          "sieveCommGrow yet; one grow at a time");
    SIEVE_RETURN_IF_ERROR(sieve::transport::StartBootstrapRoot(
        impl->config().socket_ifname, sieve::BootstrapTimeoutsOf(impl->config()),
        uniqueId->internal));
    impl->grow_id_pending() = true;
    return Status::OK();
  });
}

sieveResult_t sieveCommGrow(sieveComm_t comm, int nRanks, const sieveUniqueId* uniqueId, int rank,
                            sieveComm_t* newcomm, const sieveConfig_t* config) {
  if (comm == nullptr) {
    // A new rank: it joins the grown communicator's bootstrap like an init.
    return sieve::Guard(nullptr, "sieveCommGrow", [&]() -> Status {
      if (newcomm == nullptr) return Status::InvalidArgument("newcomm is NULL");
      *newcomm = nullptr;
      if (uniqueId == nullptr)
        return Status::InvalidArgument("uniqueId is NULL: a new rank passes the grow id");
      if (nRanks < 2 || nRanks >= sieve::transport::kMaxRanks)
        return Status::InvalidArgument(StrFormat("nRanks %d is out of range", nRanks));
      SIEVE_RETURN_IF_ERROR(sieve::CheckRank(rank, nRanks, "rank"));
      sieve::CommOptions options;
      SIEVE_RETURN_IF_ERROR(sieve::ReadCommConfig(config, &options));
      sieve::Config loaded;
      SIEVE_RETURN_IF_ERROR(sieve::LoadConfig(&loaded));
      std::string id(uniqueId->internal, SIEVE_UNIQUE_ID_BYTES);
      auto make = [id, nRanks, rank, loaded](std::unique_ptr<Comm>* out) -> Status {
        sieve::SetLogRank(rank);
        std::unique_ptr<Comm> created;
        SIEVE_RETURN_IF_ERROR(Comm::Create(id.data(), nRanks, rank, loaded, &created));
        return Finish(std::move(created), "grow (joined)", out);
      };
      if (options.blocking != 0) {
        std::unique_ptr<Comm> created;
        SIEVE_RETURN_IF_ERROR(make(&created));
        *newcomm = sieve::NewReadyHandle(std::move(created));
        return Status::OK();
      }
      std::shared_ptr<sieve::CommHandle> handle = sieve::NewPendingHandle(rank, nRanks);
      sieve::CreateInBackground(handle->worker.get(), handle.get(), {handle->async}, make);
      *newcomm = sieve::LiveComms().Publish(std::move(handle));
      return Status::InProgress("the new rank joins in the background");
    });
  }
  return sieve::Guard(sieve::IdleImpl(comm), "sieveCommGrow", [&]() -> Status {
    Comm* impl = nullptr;
    SIEVE_RETURN_IF_ERROR(sieve::CheckComm(comm, &impl));
    std::shared_ptr<sieve::CommHandle> parent;
    SIEVE_RETURN_IF_ERROR(sieve::LookupComm(comm, &parent));
    if (newcomm == nullptr) return Status::InvalidArgument("newcomm is NULL");
    *newcomm = nullptr;
    if (rank != -1)
      return Status::InvalidArgument(StrFormat(
          "rank is %d; an existing rank passes -1 and keeps its rank (%d)", rank, impl->rank()));
    if (nRanks <= impl->size() || nRanks >= sieve::transport::kMaxRanks)
      return Status::InvalidArgument(StrFormat(
          "nRanks %d must exceed the communicator's %d ranks", nRanks, impl->size()));
    if (uniqueId != nullptr && !impl->grow_id_pending())
      return Status::InvalidUsage(
          "uniqueId is not NULL, but this rank has no unused id from sieveCommGetUniqueId: only "
          "the rank that made the id passes it");
    std::string id = uniqueId != nullptr ? std::string(uniqueId->internal, SIEVE_UNIQUE_ID_BYTES)
                                          : std::string();
    return MakeChild(parent.get(), impl, config, "sieveCommGrow",
                     [impl, nRanks, id](std::unique_ptr<Comm>* out) {
                       return GrowMember(*impl, nRanks, id, out);
                     },
                     newcomm);
  });
}

}  // extern "C"
