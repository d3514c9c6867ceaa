// Transport over UCX ucp tag matching: one context + worker per communicator,
// endpoints created lazily from worker addresses exchanged at bootstrap.
#ifndef SIEVE_TRANSPORT_UCX_UCX_TRANSPORT_H_
#define SIEVE_TRANSPORT_UCX_UCX_TRANSPORT_H_

#include <memory>
#include <string>
#include <vector>

#include "transport/transport.h"

namespace sieve::transport {

class UcxTransport : public Transport {
 public:
  // Creates the UCX context and worker (UCX_* variables such as UCX_TLS apply).
  static Status Create(int rank, int size, std::unique_ptr<UcxTransport>* out);
  ~UcxTransport() override;

  // This worker's address, to be exchanged with the other ranks.
  const std::string& LocalAddress() const;
  struct PeerAddress {
    std::string worker_address;
    // Same host as this rank: UCX may use shared memory, whose transports do
    // not report peer failure, so liveness is checked through `pid` instead.
    bool same_host = false;
    int pid = 0;
  };
  // Records every rank's address (index = rank); endpoints connect on first use.
  // peer_errors: "PEER" asks UCX to report failures on every endpoint (it then
  // avoids shared memory), "NONE" never, "AUTO" only for other hosts.
  Status SetPeers(std::vector<PeerAddress> peers, const std::string& peer_errors);
  // Flushes outstanding operations (bounded by timeout_s) and closes
  // endpoints; with force, closes at once without flushing (abort, failure).
  void Shutdown(double timeout_s, bool force);

  int rank() const override;
  int size() const override;
  Status Isend(int peer, uint64_t tag, const void* buf, size_t bytes, Request* req) override;
  Status Irecv(int peer, uint64_t tag, void* buf, size_t bytes, Request* req) override;
  bool Progress() override;
  void Cancel(Request* const* reqs, size_t count) override;
  uint64_t completions() const override;
  std::string PeerFailure(int peer) const override;  // may read /proc: rate-limited
  std::string Describe() const override;
  // The UCP context's memory types include CUDA (a UCX built with CUDA support).
  bool SupportsCudaMemory() const override;
  void NotifyPeersOfFailure(uint32_t first_failed_seq, const std::string& what) override;
  Notice FailureNotice() override;

  struct Impl;

 private:
  explicit UcxTransport(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace sieve::transport

#endif  // SIEVE_TRANSPORT_UCX_UCX_TRANSPORT_H_
