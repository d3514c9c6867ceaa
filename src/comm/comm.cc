// Communicator creation: the transport up (transport/factory.h), addresses
// exchanged through the bootstrap root, peers connected.
#include "comm/comm.h"

#include <unistd.h>

#include <algorithm>

#include "comm/bootstrap_config.h"
#include "comm/cpu_isa_cap.h"
#include "comm/host_id.h"
#include "comm/thread_slice.h"
#include "core/log.h"
#include "topo/host_id.h"
#include "topo/placement.h"
#include "transport/bootstrap/bootstrap.h"
#include "transport/factory.h"

namespace sieve {

namespace {

// The NIC this rank hands to UCX and the NUMA node of its staging memory,
// with one INFO line each for the machine, the RDMA devices and the choice.
topo::Placement PlaceRank(const Config& config, int rank) {
  std::string hwloc_note, rdma_note;
  const topo::Machine& machine = topo::LoadMachine(&hwloc_note);
  static const std::vector<topo::RdmaPort> ports = topo::ListRdmaPorts(&rdma_note);
  ForeignEnv foreign = ReadForeignEnv();
  topo::PlacementRequest req;
  req.forced_device = config.net_device;
  req.user_chose = foreign.ucx_net_devices_set || !config.socket_ifname.empty();
  req.user_reason = foreign.ucx_net_devices_set ? "UCX_NET_DEVICES" : "SIEVE_SOCKET_IFNAME";
  req.local_rank = foreign.local_rank >= 0 ? foreign.local_rank : rank;
  topo::Placement p = topo::ChoosePlacement(machine, ports, req);
  if (config.bind == BindParam::kNone) p.numa = -1;
  SIEVE_INFO(kLogInit, "topology: %s%s%s", machine.Summary().c_str(),
             hwloc_note.empty() ? "" : "; ", hwloc_note.c_str());
  if (!rdma_note.empty()) SIEVE_INFO(kLogInit, "RDMA: %s", rdma_note.c_str());
  SIEVE_INFO(kLogInit,
             "NIC for UCX: %s (%s); NUMA binding of mask work buffers, GPU progress "
             "thread and pinned staging: %s",
             p.net_device.empty() ? "UCX's choice" : p.net_device.c_str(), p.reason.c_str(),
             machine.numa_nodes < 2 ? "none (one NUMA node)"
             : p.numa < 0           ? "none (SIEVE_BIND=NONE or no nearest node)"
                                    : StrFormat("node %d", p.numa).c_str());
  return p;
}

}  // namespace

Status Comm::Create(const char id[128], int nranks, int rank, const Config& config,
                    std::unique_ptr<Comm>* out) {
  static std::atomic<uint64_t> serials{0};
  std::unique_ptr<Comm> comm(new Comm());
  comm->serial_ = ++serials;
  comm->rank_ = rank;
  comm->size_ = nranks;
  comm->config_ = config;
  comm->placement_ = PlaceRank(config, rank);
  const std::string cpu_isa = ApplyCpuIsa(config);  // outside the log: it applies the cap
  SIEVE_INFO(kLogInit, "CPU kernels: %s", cpu_isa.c_str());
  transport::TransportOptions options;
  options.kind = config.transport;
  options.ucx.net_devices = comm->placement_.net_device;
  ForeignEnv foreign = ReadForeignEnv();
  options.ucx.tls = foreign.ucx_tls;
  options.ucx.user_set = foreign.ucx_set;
  options.ucx.largest_segment = config.segment_bytes;
  options.ucx.peer_errors = config.ucx_peer_errors;
  options.ucx.link_rtt_s = config.link_rtt_s;
  options.ucx.link_rate_Bps = static_cast<double>(config.link_rate);
  options.fault = config.fault;
  SIEVE_RETURN_IF_ERROR(transport::CreateTransport(options, rank, nranks, &comm->transport_));

  // host_id is "<host>#<pid>": ranks on one host find each other by name
  // and check each other's liveness by pid.
  transport::PeerInfo mine;
  mine.worker_address = comm->transport_->LocalAddress();
  // The host part is topo::HostIdentity (hostname, boot id, network
  // namespace, or SIEVE_HOST_ID): ranks in other namespaces are other hosts,
  // so UCX reports their failures and does not reach them by shared memory.
  const std::string host = topo::HostIdentity(config.host_id);
  mine.host_id = MakeHostId(host, static_cast<int>(getpid()));
  std::vector<transport::PeerInfo> all;
  SIEVE_RETURN_IF_ERROR(
      transport::BootstrapExchange(id, rank, nranks, mine, BootstrapTimeoutsOf(config), &all));
  std::vector<transport::PeerAddress> peers(all.size());
  for (size_t i = 0; i < all.size(); ++i) {
    HostId hid = ParseHostId(all[i].host_id);
    peers[i].address = std::move(all[i].worker_address);
    const bool has_hash = all[i].host_id.find('#') != std::string::npos;
    peers[i].same_host = has_hash && hid.host == host;
    peers[i].pid = hid.pid;
    comm->bootstrap_host_ids_.push_back(topo::HostIdHash(has_hash ? hid.host : all[i].host_id));
  }
  SIEVE_RETURN_IF_ERROR(comm->transport_->SetPeers(std::move(peers)));
  SIEVE_INFO(kLogInit, "rank %d of %d joined (timeout %.1f s, algo %s, segment %zu bytes)", rank,
             nranks, config.timeout_s, ParamText(config.algo), config.segment_bytes);
  *out = std::move(comm);
  return Status::OK();
}

std::unique_ptr<Comm> Comm::MakeView(Comm& root, std::vector<int> members) {
  std::unique_ptr<Comm> view(new Comm());
  view->root_ = root.root_;
  view->rank_ =
      static_cast<int>(std::find(members.begin(), members.end(), root.rank()) - members.begin());
  view->size_ = static_cast<int>(members.size());
  view->config_ = root.config_;
  view->members_ = std::move(members);
  return view;
}

void Comm::SetHosts(HostLayout layout) {
  hosts_ = std::move(layout);
  host_view_.reset();
  cross_view_.reset();
  if (!hosts_.Hierarchical()) return;
  host_view_ = MakeView(*this, hosts_.SameHost(rank_));
  cross_view_ = MakeView(*this, hosts_.SameLocalIndex(rank_));
}

Comm::~Comm() {
  if (root_ != this) return;  // a view owns nothing
  // Device work queued on streams finishes (or is released) before the
  // transport goes away.
  StopWorkQueue();
  SIEVE_INFO(kLogColl,
             "counters: %llu bytes sent, %llu received, %llu collectives (%llu masked, %llu dense "
             "fallbacks, %llu mask mismatches, %llu subnet)",
             static_cast<unsigned long long>(stats_.traffic.sent),
             static_cast<unsigned long long>(stats_.traffic.received),
             static_cast<unsigned long long>(stats_.collectives),
             static_cast<unsigned long long>(stats_.masked_collectives),
             static_cast<unsigned long long>(stats_.dense_fallbacks),
             static_cast<unsigned long long>(stats_.mask_mismatches),
             static_cast<unsigned long long>(stats_.subnet_collectives));
  // After an abort or a failure peers may be gone: close without waiting on them.
  bool force = abort_.load() || revoked_.load() || AsyncError() != Code::kOk;
  if (transport_) transport_->Shutdown(force ? 0.5 : 2.0, force);
}

void Comm::SetWorkQueue(std::shared_ptr<WorkQueue> queue) {
  std::lock_guard<std::mutex> lock(work_queue_mu_);
  work_queue_ = std::move(queue);
}

WorkQueue* Comm::work_queue() const {
  std::lock_guard<std::mutex> lock(work_queue_mu_);
  return work_queue_.get();
}

Status Comm::RunInOrder(const std::function<Status()>& fn) {
  std::shared_ptr<WorkQueue> queue;
  {
    std::lock_guard<std::mutex> lock(work_queue_mu_);
    queue = work_queue_;
  }
  return queue ? queue->RunHost(fn) : fn();
}

void Comm::StopWorkQueue() {
  std::shared_ptr<WorkQueue> queue;
  {
    std::lock_guard<std::mutex> lock(work_queue_mu_);
    queue.swap(work_queue_);
  }
  queue.reset();  // outside the lock: stopping waits for what is queued
}

void Comm::BeginRevoke() {
  root_->revoked_.store(true);
  root_->abort_.store(true);
}

void Comm::EndRevoke() {
  // The queued device work (the progress engine) sees the abort flag and is released, not run.
  root_->StopWorkQueue();
  root_->abort_.store(false);
}

transport::WaitOptions Comm::WaitOptions() const {
  transport::WaitOptions options;
  options.timeout_s = config_.timeout_s;
  // A real-time caller (the background thread under SIEVE_WORKER_REALTIME) does not spin:
  // spinning, it would keep the peers it waits for (the same priority, ranks sharing a core)
  // off the CPU.
  options.spin_s = ThreadIsRealtime() ? 0.0 : static_cast<double>(config_.wait_spin_us) * 1e-6;
  options.sleep_s = static_cast<double>(config_.wait_sleep_us) * 1e-6;
  options.abort = &root_->abort_;
  return options;
}

algo::Channel Comm::MakeChannel(const char* what, uint32_t seq, transport::MemoryType memory) {
  return algo::Channel(transport(), seq, StrFormat("%s #%u", what, seq), WaitOptions(),
                       &root_->stats_.traffic, nullptr, nullptr, members_, memory);
}

algo::Channel Comm::MakeChannel(algo::OpFingerprint fp, uint32_t seq,
                                transport::MemoryType memory, bool verdicts) {
  algo::Channel::OpControl control;
  if (fp.segment_bytes == 0) fp.segment_bytes = config_.segment_bytes;
  control.fingerprint = fp;
  control.completed_seq = &root_->completed_seq_;
  control.mismatch = &root_->mismatch_;
  control.agree = config_.agreement && verdicts;
  return algo::Channel(transport(), seq, StrFormat("%s #%u", algo::OpKindName(fp.kind), seq),
                       WaitOptions(), &root_->stats_.traffic, nullptr, &control, members_, memory);
}

Status Comm::AgreeWithoutData(algo::OpFingerprint fp, uint32_t seq) {
  if (size_ == 1) return Status::OK();
  return MakeChannel(fp, seq).Conclude(Status::OK());
}

algo::Channel Comm::MakeP2pChannel() {
  return algo::Channel(transport(), 0, "send/recv", WaitOptions(), &root_->stats_.traffic,
                       &p2p_counters_, nullptr, members_);
}

bool Comm::FirstUse(const std::string& collective, size_t bytes) {
  int size_class = 0;
  while (size_class < 63 && (size_t{1} << (size_class + 1)) <= bytes) ++size_class;
  std::lock_guard<std::mutex> lock(logged_mu_);
  return logged_choices_.insert(collective + "/" + std::to_string(size_class)).second;
}

void Comm::LogTransportOnce() {
  if (transport_logged_ || size_ == 1) return;
  transport_logged_ = true;
  SIEVE_INFO(kLogNet, "transport: %s", transport_->Describe().c_str());
  if (host_view_ == nullptr) return;
  // Hierarchical: say what the transport picked for a same-host peer (shared
  // memory is expected) and for a peer on another host (the NIC).
  const std::vector<int> same = hosts_.SameHost(rank_), cross = hosts_.SameLocalIndex(rank_);
  int local_peer = same[(hosts_.local[rank_] + 1) % same.size()];
  int remote_peer = cross[(hosts_.host[rank_] + 1) % cross.size()];
  const transport::PeerRoute local = transport_->DescribePeer(local_peer);
  const std::string& local_lanes = local.lanes;
  const std::string remote_lanes = transport_->DescribePeer(remote_peer).lanes;
  const bool shm = local.shared_memory;
  SIEVE_INFO(kLogNet, "same-host rank %d over %s%s; rank %d on another host over %s", local_peer,
             local_lanes.c_str(), shm ? " (shared memory)" : "", remote_peer, remote_lanes.c_str());
  if (!shm)
    SIEVE_WARN(
        "same-host rank %d is reached over %s, not shared memory (UCX_TLS?): the "
        "hierarchical all-reduce's host steps will be slow",
        local_peer, local_lanes.c_str());
}

void Comm::RecordError(const Status& status) {
  {
    std::lock_guard<std::mutex> lock(error_mu_);
    last_error_ = status.message();
  }
  // Ranks that called different collectives may have left messages in
  // flight that a later operation could match: the communicator is unusable.
  if (status.code() == Code::kRemoteError || status.code() == Code::kSystemError ||
      status.code() == Code::kInternalError || mismatch_)
    MarkUnusable(status);
}

void Comm::RecordAsyncError(const Status& status) {
  RecordError(status);
  MarkUnusable(status);
}

void Comm::MarkUnusable(const Status& status) {
  int expected = 0;
  if (!async_error_.compare_exchange_strong(expected, static_cast<int>(status.code()))) return;
  {
    std::lock_guard<std::mutex> lock(error_mu_);
    fatal_error_ = status.message();
  }
  // Peers blocked on us learn now instead of after their own timeout.
  if (transport_ != nullptr && !abort_.load())
    transport_->NotifyPeersOfFailure(completed_seq_, status.message());
}

std::string Comm::FatalError() const {
  std::lock_guard<std::mutex> lock(error_mu_);
  return fatal_error_;
}

std::string Comm::LastError() const {
  std::lock_guard<std::mutex> lock(error_mu_);
  return last_error_;
}

void Comm::SetLastError(const std::string& message) {
  std::lock_guard<std::mutex> lock(error_mu_);
  last_error_ = message;
}

}  // namespace sieve
