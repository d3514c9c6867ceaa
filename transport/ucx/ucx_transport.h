// Transport over UCX ucp tag matching: one context + worker per communicator,
// endpoints created lazily from worker addresses exchanged at bootstrap.
#ifndef SIEVE_TRANSPORT_UCX_UCX_TRANSPORT_H_
#define SIEVE_TRANSPORT_UCX_UCX_TRANSPORT_H_

#include <memory>
#include <string>
#include <vector>

#include "core/params.h"
#include "transport/transport.h"
#include "transport/ucx/ucx_options.h"

namespace sieve::transport {

// What this UCX offers, for sieve-info: its version, its transport resources
// ("tcp/eth0", "posix/memory", "rc_mlx5/mlx5_0:1") and memory types.
struct UcxInfo {
  std::string version;
  std::vector<std::string> resources;
  std::vector<std::string> memory_types;
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

  // "ucx:" and this worker's address.
  const std::string& LocalAddress() const override;
  // Endpoints connect on first use. Same-host peers may be reached through
  // shared memory, whose transports do not report peer failure, so their
  // liveness is checked through their pid instead (options.peer_errors).
  Status SetPeers(std::vector<PeerAddress> peers) override;
  // Flushes outstanding operations (bounded by timeout_s) and closes
  // endpoints; with force, closes at once without flushing (abort, failure).
  void Shutdown(double timeout_s, bool force) override;

  int rank() const override;
  int size() const override;
  // Host buffers are declared UCS_MEMORY_TYPE_HOST; device buffers leave the
  // memory type to UCX's detection (see RequestParam in the .cc for why).
  Status Isend(int peer, uint64_t tag, const void* buf, size_t bytes, MemoryType type,
               Request* req) override;
  Status Irecv(int peer, uint64_t tag, void* buf, size_t bytes, MemoryType type,
               Request* req) override;
  // Streamed receives are receives of UCX's generic datatype: each fragment
  // goes to the sink from UCX's receive buffer. Only below the rendezvous
  // threshold Sieve set (UCX_TLS TCP only): a rendezvous of the generic
  // datatype makes the sender push fragments (two copies, where shared memory
  // reads the sender's buffer once), and a sender that gave up on such a
  // send (a failed call) would still read its buffer when progressed later.
  bool StreamsReceives(size_t bytes) const override;
  Status IrecvToSink(int peer, uint64_t tag, ByteSink* sink, size_t bytes, Request* req) override;
  bool Progress() override;
  // Arms the worker and sleeps on its event fd (bounded by timeout_s).
  void WaitForEvents(double timeout_s) override;
  void Cancel(Request* const* reqs, size_t count) override;
  uint64_t completions() const override;
  std::string PeerFailure(int peer) const override;  // may read /proc: rate-limited
  std::string Describe() const override;
  // Lanes "posix/memory,cma/memory" or "tcp/eth0": those of the endpoint to
  // `peer` (connects it first if needed); "" if it cannot be connected.
  PeerRoute DescribePeer(int peer) override;
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
