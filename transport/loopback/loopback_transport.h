// The loopback transport (SIEVE_TRANSPORT=LOOPBACK): the ranks of a
// communicator are threads of one process and messages are copied in memory,
// so the algorithms and codecs run without UCX, in tests that take seconds.
//
// Matching is the UCX transport's (ucx/ucx_transport.h): a receive matches
// the full 64-bit tag whoever sent it (the tag names the sender); messages
// match in the order they were sent; a longer message fails the receive
// ("message longer than the posted receive"), a shorter one completes it with
// its length. Messages up to kEagerBytes are copied when posted and their send
// completes at once (UCX's eager protocol); larger ones are read from the
// sender's buffer when the receiver matches them and their send completes only
// then (rendezvous), so a send buffer reused too early shows here as over UCX.
// Cancelling a rendezvous send withdraws it: the receiver never reads it. A
// rank whose transport shut down (communicator destroyed or aborted) is a
// failed peer: PeerFailure names it and sends to it fail; what it sent before
// is still delivered.
//
// Buffers are copied with memcpy whatever their memory type: device memory
// must be host-addressable (the fake device's is), so SupportsCudaMemory() is
// false and real device buffers reach it only with SIEVE_GPU_DIRECT=FORCE.
#ifndef SIEVE_TRANSPORT_LOOPBACK_LOOPBACK_TRANSPORT_H_
#define SIEVE_TRANSPORT_LOOPBACK_LOOPBACK_TRANSPORT_H_

#include <deque>
#include <list>
#include <memory>
#include <string>
#include <vector>

#include "transport/failure_notice.h"
#include "transport/transport.h"

namespace sieve::transport {

class LoopbackTransport : public Transport {
 public:
  // Messages of at most this many bytes are copied when sent.
  static constexpr size_t kEagerBytes = 8192;

  // One rank's endpoint, registered for the other threads to find through the
  // address the bootstrap carries.
  static Status Create(int rank, int size, std::unique_ptr<Transport>* out);
  ~LoopbackTransport() override;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  // "loopback:<pid>:<endpoint number>".
  const std::string& LocalAddress() const override { return address_; }
  // Fails unless every peer is a loopback endpoint of this process. A peer
  // that already left is a failed peer.
  Status SetPeers(std::vector<PeerAddress> peers) override;
  // Without force, first waits (bounded) for its rendezvous sends to be read.
  void Shutdown(double timeout_s, bool force) override;

  Status Isend(int peer, uint64_t tag, const void* buf, size_t bytes, MemoryType type,
               Request* req) override;
  Status Irecv(int peer, uint64_t tag, void* buf, size_t bytes, MemoryType type,
               Request* req) override;
  // Streamed receives get the message in pieces as UCX may hand them over:
  // odd lengths, odd addresses, out of order (Stream in the .cc).
  bool StreamsReceives(size_t) const override { return true; }
  Status IrecvToSink(int peer, uint64_t tag, ByteSink* sink, size_t bytes, Request* req) override;
  bool Progress() override;
  // Sleeps until a message or a completion arrives (bounded by timeout_s).
  void WaitForEvents(double timeout_s) override;
  void Cancel(Request* const* reqs, size_t count) override;
  uint64_t completions() const override { return completions_; }
  std::string PeerFailure(int peer) const override;
  void NotifyPeersOfFailure(uint32_t first_failed_seq, const std::string& what) override;
  Notice FailureNotice() override;
  std::string Describe() const override;
  PeerRoute DescribePeer(int peer) override;

  struct Endpoint;
  struct SendState;
  struct Message;

 private:
  LoopbackTransport(int rank, int size, std::shared_ptr<Endpoint> self);
  struct PostedRecv {
    Request* req;
    char* buf;
    ByteSink* sink;  // a streamed receive's (then buf is nullptr)
    size_t bytes;
    uint64_t tag, mask;
  };
  // Irecv (into buf) or IrecvToSink (to sink).
  Status Receive(int peer, uint64_t tag, void* buf, ByteSink* sink, size_t bytes, Request* req);
  Status PostRecv(void* buf, size_t bytes, uint64_t tag, uint64_t mask, Request* req,
                  ByteSink* sink = nullptr);
  // Puts a matched message's bytes where `recv` wants them.
  static void Place(const PostedRecv& recv, const char* data, size_t bytes);
  void PostNoticeReceive();
  // Matches an arrived message with the earliest posted receive it fits, else
  // keeps it for a later receive; drops a withdrawn rendezvous.
  void Arrive(Message m);
  // False (and nothing done) when `m` is a withdrawn rendezvous.
  bool Deliver(Message& m, const PostedRecv& recv);
  void Complete(Request* req);

  const int rank_, size_;
  std::shared_ptr<Endpoint> self_;
  std::string address_;
  std::vector<std::shared_ptr<Endpoint>> peers_;  // index = rank, once SetPeers succeeded
  bool shut_down_ = false;
  std::list<PostedRecv> posted_;    // receives not matched yet, in posting order
  std::deque<Message> unexpected_;  // messages not matched yet, in arrival order
  std::vector<std::shared_ptr<SendState>> rendezvous_;  // our sends not read yet
  uint64_t completions_ = 0;

  // Failure notices: one receive (from any rank) always posted, and what we sent.
  char notice_buffer_[kNoticeBytes] = {};
  Request notice_recv_;
  Notice notice_;
  std::unique_ptr<std::string> notice_body_;
  std::vector<std::unique_ptr<Request>> notices_sent_;
};

}  // namespace sieve::transport

#endif  // SIEVE_TRANSPORT_LOOPBACK_LOOPBACK_TRANSPORT_H_
