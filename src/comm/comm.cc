// Communicator creation: UCX worker up, addresses exchanged through the
// bootstrap root, endpoints connected lazily on first use.
#include "comm/comm.h"

#include <unistd.h>

#include "core/log.h"
#include "transport/bootstrap/bootstrap.h"

namespace sieve {

Status Comm::Create(const char id[128], int nranks, int rank, const Config& config,
                    std::unique_ptr<Comm>* out) {
  std::unique_ptr<Comm> comm(new Comm());
  comm->rank_ = rank;
  comm->size_ = nranks;
  comm->config_ = config;
  SIEVE_RETURN_IF_ERROR(transport::UcxTransport::Create(rank, nranks, &comm->transport_));

  transport::PeerInfo mine;
  mine.worker_address = comm->transport_->LocalAddress();
  char host[256] = {};
  gethostname(host, sizeof(host) - 1);
  mine.host_id = host;
  std::vector<transport::PeerInfo> all;
  SIEVE_RETURN_IF_ERROR(
      transport::BootstrapExchange(id, rank, nranks, mine, config.timeout_s, &all));
  std::vector<std::string> addresses;
  addresses.reserve(all.size());
  for (auto& peer : all) addresses.push_back(std::move(peer.worker_address));
  SIEVE_RETURN_IF_ERROR(comm->transport_->SetPeerAddresses(std::move(addresses)));
  SIEVE_INFO(kLogInit, "rank %d of %d joined (timeout %.1f s, algo %s, segment %zu bytes)", rank,
             nranks, config.timeout_s, config.algo.c_str(), config.segment_bytes);
  *out = std::move(comm);
  return Status::OK();
}

Comm::~Comm() {
  if (transport_) transport_->Shutdown(abort_.load() ? 0.1 : 2.0);
}

transport::WaitOptions Comm::WaitOptions() const {
  transport::WaitOptions options;
  options.timeout_s = config_.timeout_s;
  options.abort = &abort_;
  return options;
}

bool Comm::FirstUse(const std::string& collective, size_t bytes) {
  int size_class = 0;
  while (size_class < 63 && (size_t{1} << (size_class + 1)) <= bytes) ++size_class;
  return logged_choices_.insert(collective + "/" + std::to_string(size_class)).second;
}

void Comm::RecordError(const Status& status) {
  {
    std::lock_guard<std::mutex> lock(error_mu_);
    last_error_ = status.message();
  }
  if (status.code() == Code::kRemoteError || status.code() == Code::kSystemError ||
      status.code() == Code::kInternalError) {
    int expected = 0;
    if (async_error_.compare_exchange_strong(expected, static_cast<int>(status.code()))) {
      std::lock_guard<std::mutex> lock(error_mu_);
      fatal_error_ = status.message();
    }
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
