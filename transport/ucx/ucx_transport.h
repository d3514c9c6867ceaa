// Transport over UCX ucp tag matching: one context + worker per communicator,
// endpoints created lazily from worker addresses exchanged at bootstrap.
#ifndef SIEVE_TRANSPORT_UCX_UCX_TRANSPORT_H_
#define SIEVE_TRANSPORT_UCX_UCX_TRANSPORT_H_

#include <memory>
#include <string>
#include <vector>

#include "core/params.h"
#include "transport/transport.h"

namespace sieve::transport {

// What this UCX offers, for sieve-info: its version, its transport resources
// ("tcp/eth0", "posix/memory", "rc_mlx5/mlx5_0:1") and memory types.
struct UcxInfo {
  std::string version;
  std::vector<std::string> resources;
  std::vector<std::string> memory_types;
};

struct UcxOptions {
  // NICs UCX may use (UCX_NET_DEVICES syntax); empty: UCX's own choice.
  std::string net_devices;
  // What the user told UCX, for Sieve's own UCX settings (ucx_tuning.h): the
  // UCX_TLS value, the UCX_* variables set (never overridden), and the
  // largest pipelined message (SIEVE_SEGMENT_BYTES).
  std::string tls;
  std::vector<std::string> user_set;
  size_t largest_segment = 512 * 1024;
  // The link as the user stated it (SIEVE_LINK_RTT, SIEVE_LINK_RATE; 0: unknown),
  // for TCP socket buffers that cover its bandwidth-delay product.
  double link_rtt_s = 0;
  double link_rate_Bps = 0;
};

class UcxTransport : public Transport {
 public:
  // Creates the UCX context and worker (UCX_* variables such as UCX_TLS apply;
  // options.net_devices overrides UCX_NET_DEVICES).
  static Status Create(int rank, int size, const UcxOptions& options,
                       std::unique_ptr<UcxTransport>* out);
  // Opens a context with `options` and lists what it offers.
  static Status Query(const UcxOptions& options, UcxInfo* out);
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
  // peer_errors (SIEVE_UCX_PEER_ERRORS): kPeer asks UCX to report failures on every
  // endpoint (it then avoids shared memory), kNone never, kAuto only for other hosts.
  Status SetPeers(std::vector<PeerAddress> peers, PeerErrorsParam peer_errors);
  // Flushes outstanding operations (bounded by timeout_s) and closes
  // endpoints; with force, closes at once without flushing (abort, failure).
  void Shutdown(double timeout_s, bool force);

  int rank() const override;
  int size() const override;
  Status Isend(int peer, uint64_t tag, const void* buf, size_t bytes, Request* req) override;
  Status Irecv(int peer, uint64_t tag, void* buf, size_t bytes, Request* req) override;
  bool Progress() override;
  // Arms the worker and sleeps on its event fd (bounded by timeout_s).
  void WaitForEvents(double timeout_s) override;
  void Cancel(Request* const* reqs, size_t count) override;
  uint64_t completions() const override;
  std::string PeerFailure(int peer) const override;  // may read /proc: rate-limited
  std::string Describe() const override;
  // "posix/memory,cma/memory" or "tcp/eth0": the lanes of the endpoint to
  // `peer` (connects it first if needed); "" if it cannot be connected.
  std::string DescribePeer(int peer);
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
