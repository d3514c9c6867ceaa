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
  // Records every rank's worker address (index = rank); endpoints connect on first use.
  Status SetPeerAddresses(std::vector<std::string> addresses);
  // Flushes outstanding operations (bounded by timeout_s) and closes endpoints.
  void Shutdown(double timeout_s);

  int rank() const override;
  int size() const override;
  Status Isend(int peer, uint64_t tag, const void* buf, size_t bytes, Request* req) override;
  Status Irecv(int peer, uint64_t tag, void* buf, size_t bytes, Request* req) override;
  bool Progress() override;
  void Cancel(Request* req) override;
  uint64_t completions() const override;
  std::string PeerFailure(int peer) const override;
  std::string Describe() const override;

  struct Impl;

 private:
  explicit UcxTransport(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace sieve::transport

#endif  // SIEVE_TRANSPORT_UCX_UCX_TRANSPORT_H_
