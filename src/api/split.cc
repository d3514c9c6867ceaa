// sieveCommSplit: every rank of the parent shares (color, key) with an all-gather; per color the
// first member by (key, parent rank) starts a bootstrap root whose id a second all-gather hands
// to the others, and the members then join a fresh communicator in (key, parent rank) order.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "api/api_guard.h"
#include "api/arg_check.h"
#include "api/nonblocking.h"
#include "comm/bootstrap_config.h"
#include "comm/membership.h"
#include "coll/collectives.h"
#include "coll/hier.h"
#include "core/log.h"
#include "transport/bootstrap/bootstrap.h"

using sieve::Comm;
using sieve::Config;
using sieve::Status;
using sieve::StrFormat;

namespace {

constexpr size_t kIdBytes = SIEVE_UNIQUE_ID_BYTES;

struct Choice {
  int32_t color;
  int32_t key;
};

// Gathers count int32 values per rank into *all (rank r's at r * count) over the parent.
Status GatherInts(Comm& parent, const int32_t* mine, size_t count, std::vector<int32_t>* all) {
  all->assign(count * static_cast<size_t>(parent.size()), 0);
  sieve::coll::CollArgs args;
  args.send = mine;
  args.recv = all->data();
  args.count = count;
  args.dtype = sieve::kernels::DType::kInt32;
  // After any device work queued on the parent (one order per communicator).
  return parent.RunInOrder([&] { return sieve::coll::AllGather(parent, args); });
}

// Every rank's color must be non-negative or SIEVE_SPLIT_NOCOLOR; each rank checks all of them
// so a bad color fails the split on every rank alike instead of leaving the others waiting.
Status CheckColors(const std::vector<Choice>& choices) {
  for (size_t r = 0; r < choices.size(); ++r) {
    int color = choices[r].color;
    if (color < 0 && color != SIEVE_SPLIT_NOCOLOR)
      return Status::InvalidArgument(
          StrFormat("rank %zu passed color %d; a color is >= 0 or SIEVE_SPLIT_NOCOLOR (%d)", r,
                    color, SIEVE_SPLIT_NOCOLOR));
  }
  return Status::OK();
}

// Parent ranks that chose `color`, ordered by (key, parent rank): the new communicator's ranks.
std::vector<int> MembersOf(const std::vector<Choice>& choices, int color) {
  std::vector<int> members;
  for (size_t r = 0; r < choices.size(); ++r)
    if (choices[r].color == color) members.push_back(static_cast<int>(r));
  std::stable_sort(members.begin(), members.end(),
                   [&](int a, int b) { return choices[a].key < choices[b].key; });
  return members;
}

// The leader of each color starts a bootstrap root; a second all-gather hands its id to every
// parent rank (ranks that lead nothing contribute zeros). Writes the id of `leader`'s root. A
// leader whose root (or config) failed still takes part, with zeros, so nobody waits for it.
Status ShareRootId(Comm& parent, bool is_leader, int leader, const Status& config_status,
                   const Config& config, char id[kIdBytes]) {
  int32_t mine[kIdBytes / sizeof(int32_t)] = {};
  Status root_status = config_status;
  if (is_leader && root_status.ok()) {
    char root_id[kIdBytes];
    root_status =
        sieve::transport::StartBootstrapRoot(config.socket_ifname,
                                             sieve::BootstrapTimeoutsOf(config), root_id);
    if (root_status.ok()) std::memcpy(mine, root_id, kIdBytes);
  }
  std::vector<int32_t> all;
  SIEVE_RETURN_IF_ERROR(GatherInts(parent, mine, kIdBytes / sizeof(int32_t), &all));
  SIEVE_RETURN_IF_ERROR(root_status);
  if (leader < 0) return Status::OK();
  const int32_t* theirs = all.data() + static_cast<size_t>(leader) * (kIdBytes / sizeof(int32_t));
  if (std::all_of(theirs, theirs + kIdBytes / sizeof(int32_t), [](int32_t v) { return v == 0; }))
    return Status::RemoteError(
        StrFormat("rank %d, the first member of this color, could not start the new communicator's "
                  "bootstrap root (see its log)",
                  leader));
  std::memcpy(id, theirs, kIdBytes);
  return Status::OK();
}

// After sieveCommRevoke the parent's ranks may stand at different places of its sequence: the
// choices and the roots' ids travel in comm/membership's exchange instead of its all-gathers.
Status SplitRevoked(Comm& parent, int color, int key, std::unique_ptr<Comm>* created) {
  sieve::membership::SplitPlan plan;
  SIEVE_RETURN_IF_ERROR(
      sieve::membership::PlanSplit(parent, color, key, SIEVE_SPLIT_NOCOLOR, &plan));
  if (!plan.member) return Status::OK();
  Config config;
  SIEVE_RETURN_IF_ERROR(sieve::LoadConfig(&config));
  std::unique_ptr<Comm> comm;
  SIEVE_RETURN_IF_ERROR(Comm::Create(plan.id, plan.new_size, plan.new_rank, config, &comm));
  SIEVE_RETURN_IF_ERROR(sieve::coll::LearnHosts(*comm));
  *created = std::move(comm);
  return Status::OK();
}

// Makes this rank's new communicator in *created (left null for SIEVE_SPLIT_NOCOLOR).
Status Split(Comm& parent, int color, int key, std::unique_ptr<Comm>* created) {
  if (parent.revoked()) return SplitRevoked(parent, color, key, created);
  const int32_t mine[2] = {color, key};
  std::vector<int32_t> gathered;
  SIEVE_RETURN_IF_ERROR(GatherInts(parent, mine, 2, &gathered));
  std::vector<Choice> choices(parent.size());
  for (size_t r = 0; r < choices.size(); ++r) choices[r] = {gathered[2 * r], gathered[2 * r + 1]};
  SIEVE_RETURN_IF_ERROR(CheckColors(choices));

  std::vector<int> members;
  if (color != SIEVE_SPLIT_NOCOLOR) members = MembersOf(choices, color);
  int leader = members.empty() ? -1 : members.front();
  Config config;
  Status config_status = sieve::LoadConfig(&config);
  char id[kIdBytes] = {};
  SIEVE_RETURN_IF_ERROR(
      ShareRootId(parent, leader == parent.rank(), leader, config_status, config, id));
  if (color == SIEVE_SPLIT_NOCOLOR) return Status::OK();

  int new_rank =
      static_cast<int>(std::find(members.begin(), members.end(), parent.rank()) - members.begin());
  int new_size = static_cast<int>(members.size());
  SIEVE_INFO(sieve::kLogInit, "split: color %d key %d -> rank %d of %d", color, key, new_rank,
             new_size);
  std::unique_ptr<Comm> comm;
  SIEVE_RETURN_IF_ERROR(Comm::Create(id, new_size, new_rank, config, &comm));
  SIEVE_RETURN_IF_ERROR(sieve::coll::LearnHosts(*comm));
  // The parent's round trip (agreed by all its ranks) where the new one spans hosts too.
  if (comm->hosts().nhosts > 1) comm->SetLinkRtt(parent.link_rtt_s());
  *created = std::move(comm);
  return Status::OK();
}

// Counts a background split as a call on the parent, so aborting the parent waits for it.
class ParentCall {
 public:
  explicit ParentCall(Comm* parent) : parent_(parent) { parent_->active_calls().fetch_add(1); }
  ~ParentCall() { parent_->active_calls().fetch_sub(1); }
  ParentCall(const ParentCall&) = delete;
  ParentCall& operator=(const ParentCall&) = delete;

 private:
  Comm* parent_;
};

// Non-blocking: the split runs on the new communicator's thread (or, for SIEVE_SPLIT_NOCOLOR,
// the parent's); parent and child are in progress until it is done.
Status SplitInBackground(sieve::CommHandle* parent_handle, Comm* parent, int color, int key,
                         const std::string& name, sieveComm_t* newcomm) {
  std::shared_ptr<sieve::CommHandle> child =
      color == SIEVE_SPLIT_NOCOLOR ? nullptr : sieve::NewPendingHandle(-1, -1);
  sieve::BackgroundWorker* worker =
      child != nullptr ? child->worker.get() : parent_handle->worker.get();
  if (worker == nullptr) {
    // No color on a blocking parent: no handle to poll, so the split runs now.
    std::unique_ptr<Comm> none;
    return Split(*parent, color, key, &none);
  }
  std::vector<std::shared_ptr<sieve::AsyncState>> holds{parent_handle->async};
  if (child != nullptr) holds.push_back(child->async);
  sieve::CreateInBackground(
      worker, child.get(), holds, [parent, color, key, name](std::unique_ptr<Comm>* created) {
        ParentCall call(parent);
        if (!name.empty()) SIEVE_INFO(sieve::kLogInit, "split into communicator \"%s\"", name.c_str());
        Status st = Split(*parent, color, key, created);
        if (!st.ok()) parent->RecordError(st.WithContext("sieveCommSplit"));
        return st;
      });
  if (child != nullptr) *newcomm = sieve::LiveComms().Publish(std::move(child));
  return Status::InProgress("the split runs in the background");
}

}  // namespace

extern "C" sieveResult_t sieveCommSplitConfig(sieveComm_t comm, int color, int key,
                                              sieveComm_t* newcomm, const sieveConfig_t* config) {
  return sieve::Guard(sieve::IdleImpl(comm), "sieveCommSplit", [&]() -> Status {
    // A revoked communicator may be split (sieveCommRevoke), even after a failure.
    Comm* impl = sieve::IdleImpl(comm);
    if (impl == nullptr || !impl->revoked()) SIEVE_RETURN_IF_ERROR(sieve::CheckComm(comm, &impl));
    std::shared_ptr<sieve::CommHandle> parent;
    SIEVE_RETURN_IF_ERROR(sieve::LookupComm(comm, &parent));
    if (newcomm == nullptr) return Status::InvalidArgument("newcomm is NULL");
    *newcomm = nullptr;
    sieve::CommOptions options;
    SIEVE_RETURN_IF_ERROR(sieve::ReadCommConfig(config, &options));
    bool blocking = options.blocking == SIEVE_CONFIG_UNDEF_INT ? parent->worker == nullptr
                                                               : options.blocking != 0;
    if (!blocking)
      return SplitInBackground(parent.get(), impl, color, key, options.name, newcomm);
    std::unique_ptr<Comm> created;
    SIEVE_RETURN_IF_ERROR(Split(*impl, color, key, &created));
    if (created) *newcomm = sieve::NewReadyHandle(std::move(created));
    return Status::OK();
  });
}

extern "C" sieveResult_t sieveCommSplit(sieveComm_t comm, int color, int key,
                                        sieveComm_t* newcomm) {
  return sieveCommSplitConfig(comm, color, key, newcomm, nullptr);
}
