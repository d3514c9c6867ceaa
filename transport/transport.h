// The transport interface algorithms are written against: non-blocking tagged
// send/recv of byte ranges to a rank, and progress. Implementations live below
// this folder (ucx/, loopback/; the fault-injection decorator) and are chosen
// by transport/factory.h; nothing above it includes UCX.
#ifndef SIEVE_TRANSPORT_TRANSPORT_H_
#define SIEVE_TRANSPORT_TRANSPORT_H_

#include <sched.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"

namespace sieve::transport {

// Where a send's or receive's buffer lives. The caller always knows (host
// calls and staging use host memory; the direct path hands the caller's device
// buffers and device scratch), so a transport never has to guess. kDevice is
// CUDA memory of any kind the driver reports as device memory: plain device
// allocations and managed (unified) memory alike (gpu/memory_kind.h).
enum class MemoryType : uint8_t { kHost, kDevice };
inline const char* MemoryTypeName(MemoryType type) {
  return type == MemoryType::kDevice ? "device" : "host";
}

// One posted operation. The caller owns it and keeps its address stable until
// it is done (or cancelled); the transport writes `state` from its callbacks.
struct Request {
  enum State : int { kIdle, kPending, kDone, kFailed };
  State state = kIdle;
  bool is_recv = false;
  int peer = -1;
  uint64_t tag = 0;
  size_t bytes = 0;           // requested length
  size_t received_bytes = 0;  // recv: length of the message that matched
  std::string error;          // kFailed: the transport's reason
  bool truncated = false;     // kFailed recv: the matched message was longer than `bytes`
  bool counted = false;       // the caller already accounted for its bytes
  void* impl = nullptr;       // transport-private handle while pending
};

// A receive request as Irecv and IrecvToSink start it (kIdle until posted).
inline Request RecvRequest(int peer, uint64_t tag, size_t bytes) {
  Request req;
  req.is_recv = true;
  req.peer = peer;
  req.tag = tag;
  req.bytes = bytes;
  return req;
}

// Where a streamed receive's bytes go (Transport::IrecvToSink): the message
// arrives as pieces [offset, offset + bytes) that together cover it once, in
// any order and at any byte boundary and alignment. `data` is the transport's
// own memory, valid only during the call; Consume runs inside Progress or the
// posting call, on the thread that called it.
class ByteSink {
 public:
  virtual void Consume(size_t offset, const void* data, size_t bytes) = 0;

 protected:
  ~ByteSink() = default;
};

// One rank's address as the bootstrap exchanged it (index = rank).
struct PeerAddress {
  std::string address;  // the peer transport's LocalAddress()
  // Same host as this rank; `pid` then names its process, so a transport
  // whose links do not report peer failure can check its liveness.
  bool same_host = false;
  int pid = 0;
};

// How a peer is reached, for INFO logs.
struct PeerRoute {
  std::string lanes;           // "posix/memory,cma/memory", "tcp/eth0", "loopback"; "" if unknown
  bool shared_memory = false;  // through memory shared on this host (no NIC)
};

// Lifecycle: a factory (transport/factory.h) creates the transport; its
// LocalAddress() goes to every rank through the bootstrap; SetPeers() gets
// every rank's; then operations; Shutdown() (or destruction) ends it.
class Transport {
 public:
  virtual ~Transport() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;

  // What the other ranks need to reach this one (opaque bytes; it names the
  // kind of transport, so ranks that chose different ones fail in SetPeers).
  virtual const std::string& LocalAddress() const = 0;
  // Records every rank's address (index = rank, this rank's own included).
  virtual Status SetPeers(std::vector<PeerAddress> peers) = 0;
  // Ends the transport: flushes what is in flight (bounded by timeout_s) and
  // disconnects; with force, disconnects at once (abort, failure). Peers find
  // this rank failed afterwards (how soon depends on the transport: at once
  // over the loopback). Idempotent; sends afterwards fail.
  virtual void Shutdown(double timeout_s, bool force) = 0;

  // Posts a send of `bytes` at `buf`, memory of `type`, to `peer` with `tag`.
  // The buffer must stay valid and unchanged until req->state leaves kPending.
  virtual Status Isend(int peer, uint64_t tag, const void* buf, size_t bytes, MemoryType type,
                       Request* req) = 0;
  // Posts a receive into `buf` (memory of `type`) from `peer` with exactly
  // `tag`. A longer message fails the request; a shorter one completes it
  // with received_bytes < bytes.
  virtual Status Irecv(int peer, uint64_t tag, void* buf, size_t bytes, MemoryType type,
                       Request* req) = 0;
  // Whether a receive of `bytes` may use IrecvToSink: where the transport
  // copies a message out of its own receive buffer anyway (UCX's eager
  // protocol), handing the bytes to the receiver there saves a copy into a
  // buffer that would only be read once. Not where the transport could move
  // the message straight into the receiver's buffer (a rendezvous read).
  virtual bool StreamsReceives(size_t bytes) const {
    (void)bytes;
    return false;
  }
  // Posts a receive of host memory as Irecv does, but the message goes to
  // `sink` as it arrives instead of into a buffer: a longer message fails the
  // request (the sink may have seen part of it), a shorter one completes it
  // with received_bytes < bytes. `sink` must stay valid until req->state
  // leaves kPending. Works for any size; use it where StreamsReceives(bytes).
  virtual Status IrecvToSink(int peer, uint64_t tag, ByteSink* sink, size_t bytes, Request* req) {
    (void)peer, (void)tag, (void)sink, (void)bytes, (void)req;
    return Status::Internal("this transport does not stream receives");
  }
  // Makes progress on all posted operations; returns true if anything happened.
  virtual bool Progress() = 0;
  // Sleeps until the transport has something to progress, at most `timeout_s`
  // (callers bound it so abort flags and deadlines are still seen). May return
  // early or spuriously; the caller progresses again either way. The default,
  // for transports without an event source, only yields the CPU.
  virtual void WaitForEvents(double timeout_s) {
    (void)timeout_s;
    sched_yield();
  }
  // Cancels pending requests and waits (bounded, for all of them together)
  // until the transport no longer touches them; what UCX cannot cancel in
  // time (a rendezvous send) is handed back to UCX, which finishes or drops it
  // on its own, and fails here. Each request's resources are freed either way.
  virtual void Cancel(Request* const* reqs, size_t count) = 0;
  // Number of operations completed so far (any outcome): the progress measure.
  virtual uint64_t completions() const = 0;
  // Non-empty once the connection to `peer` has failed (reset, closed, unreachable).
  virtual std::string PeerFailure(int peer) const = 0;
  // Tells every reachable peer that this rank failed (best effort, bounded):
  // it will not complete collective `first_failed_seq` nor any later one.
  // Peers waiting in those collectives then fail at once instead of timing
  // out; peers still finishing an earlier one are not disturbed.
  virtual void NotifyPeersOfFailure(uint32_t first_failed_seq, const std::string& what) = 0;
  struct Notice {
    bool received = false;
    uint32_t first_failed_seq = 0;
    std::string text;  // "rank 2 failed allreduce #7: ..."
  };
  // The failure notice with the earliest sequence number received so far.
  virtual Notice FailureNotice() = 0;
  // A one-line description of the chosen transports, for INFO logs.
  virtual std::string Describe() const = 0;
  // How `peer` is reached (connecting it first if needed); empty lanes if it
  // cannot be connected.
  virtual PeerRoute DescribePeer(int peer) = 0;
  // Whether the transport can send from and receive into CUDA device memory.
  virtual bool SupportsCudaMemory() const { return false; }
};

}  // namespace sieve::transport

#endif  // SIEVE_TRANSPORT_TRANSPORT_H_
