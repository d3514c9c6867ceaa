// Communicator creation: UCX worker up, addresses exchanged through the
// bootstrap root, endpoints connected lazily on first use.
#include "comm/comm.h"

#include <unistd.h>

#include <cstdlib>

#include "core/log.h"
#include "transport/bootstrap/bootstrap.h"
#include "transport/fault_transport.h"

namespace sieve {

Status Comm::Create(const char id[128], int nranks, int rank, const Config& config,
                    std::unique_ptr<Comm>* out) {
  std::unique_ptr<Comm> comm(new Comm());
  comm->rank_ = rank;
  comm->size_ = nranks;
  comm->config_ = config;
  SIEVE_RETURN_IF_ERROR(transport::UcxTransport::Create(rank, nranks, &comm->transport_));

  // host_id is "<hostname>#<pid>": ranks on one host find each other by name
  // and check each other's liveness by pid.
  transport::PeerInfo mine;
  mine.worker_address = comm->transport_->LocalAddress();
  char host[256] = {};
  gethostname(host, sizeof(host) - 1);
  mine.host_id = StrFormat("%s#%d", host, static_cast<int>(getpid()));
  std::vector<transport::PeerInfo> all;
  SIEVE_RETURN_IF_ERROR(
      transport::BootstrapExchange(id, rank, nranks, mine, config.timeout_s, &all));
  std::vector<transport::UcxTransport::PeerAddress> peers(all.size());
  for (size_t i = 0; i < all.size(); ++i) {
    const std::string& hid = all[i].host_id;
    size_t hash = hid.rfind('#');
    peers[i].worker_address = std::move(all[i].worker_address);
    peers[i].same_host = hash != std::string::npos && hid.compare(0, hash, host) == 0;
    peers[i].pid = hash != std::string::npos ? std::atoi(hid.c_str() + hash + 1) : 0;
  }
  SIEVE_RETURN_IF_ERROR(comm->transport_->SetPeers(std::move(peers), config.ucx_peer_errors));
  comm->active_transport_ = comm->transport_.get();
  if (!config.fault.empty()) {
    std::vector<transport::FaultRule> rules;
    SIEVE_RETURN_IF_ERROR(transport::ParseFaultRules(config.fault, rank, &rules));
    if (!rules.empty()) {
      comm->fault_transport_ =
          std::make_unique<transport::FaultTransport>(comm->transport_.get(), std::move(rules));
      comm->active_transport_ = comm->fault_transport_.get();
    }
  }
  SIEVE_INFO(kLogInit, "rank %d of %d joined (timeout %.1f s, algo %s, segment %zu bytes)", rank,
             nranks, config.timeout_s, config.algo.c_str(), config.segment_bytes);
  *out = std::move(comm);
  return Status::OK();
}

Comm::~Comm() {
  // Device work queued on streams finishes (or is released) before the
  // transport goes away.
  gpu_state_.reset();
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
  bool force = abort_.load() || AsyncError() != Code::kOk;
  if (transport_) transport_->Shutdown(force ? 0.5 : 2.0, force);
}

transport::WaitOptions Comm::WaitOptions() const {
  transport::WaitOptions options;
  options.timeout_s = config_.timeout_s;
  options.abort = &abort_;
  return options;
}

algo::Channel Comm::MakeChannel(const char* what, uint32_t seq) {
  return algo::Channel(active_transport_, seq, StrFormat("%s #%u", what, seq), WaitOptions(),
                       &stats_.traffic);
}

algo::Channel Comm::MakeChannel(algo::OpFingerprint fp, uint32_t seq) {
  algo::Channel::OpControl control;
  if (fp.segment_bytes == 0) fp.segment_bytes = config_.segment_bytes;
  control.fingerprint = fp;
  control.completed_seq = &completed_seq_;
  control.mismatch = &mismatch_;
  control.agree = config_.agreement;
  return algo::Channel(active_transport_, seq,
                       StrFormat("%s #%u", algo::OpKindName(fp.kind), seq), WaitOptions(),
                       &stats_.traffic, nullptr, &control);
}

algo::Channel Comm::MakeP2pChannel() {
  return algo::Channel(active_transport_, 0, "send/recv", WaitOptions(), &stats_.traffic,
                       &p2p_counters_);
}

bool Comm::FirstUse(const std::string& collective, size_t bytes) {
  int size_class = 0;
  while (size_class < 63 && (size_t{1} << (size_class + 1)) <= bytes) ++size_class;
  return logged_choices_.insert(collective + "/" + std::to_string(size_class)).second;
}

void Comm::LogTransportOnce() {
  if (transport_logged_ || size_ == 1) return;
  transport_logged_ = true;
  SIEVE_INFO(kLogNet, "transport: %s (SIEVE_UCX_PEER_ERRORS=%s)",
             active_transport_->Describe().c_str(), config_.ucx_peer_errors.c_str());
}

void Comm::RecordError(const Status& status) {
  {
    std::lock_guard<std::mutex> lock(error_mu_);
    last_error_ = status.message();
  }
  // Ranks that called different collectives may have left messages in
  // flight that a later operation could match: the communicator is unusable.
  if (status.code() == Code::kRemoteError || status.code() == Code::kSystemError ||
      status.code() == Code::kInternalError || mismatch_) {
    int expected = 0;
    if (async_error_.compare_exchange_strong(expected, static_cast<int>(status.code()))) {
      {
        std::lock_guard<std::mutex> lock(error_mu_);
        fatal_error_ = status.message();
      }
      // Peers blocked on us learn now instead of after their own timeout.
      if (active_transport_ != nullptr && !abort_.load())
        active_transport_->NotifyPeersOfFailure(completed_seq_, status.message());
    }
  }
}

void Comm::RecordAsyncError(const Status& status) {
  RecordError(status);
  int expected = 0;
  if (async_error_.compare_exchange_strong(expected, static_cast<int>(status.code()))) {
    {
      std::lock_guard<std::mutex> lock(error_mu_);
      fatal_error_ = status.message();
    }
    if (active_transport_ != nullptr && !abort_.load())
      active_transport_->NotifyPeersOfFailure(completed_seq_, status.message());
  }
}

std::string Comm::FatalError() const {
  std::lock_guard<std::mutex> lock(error_mu_);
  return fatal_error_;
}

std::string Comm::LastError() const {
  std::lock_guard<std::mutex> lock(error_mu_);
  return last_error_;
}

}  // namespace sieve
