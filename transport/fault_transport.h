// Fault injection for tests: a Transport that wraps the real one (a decorator
// over any transport of the factory) and, by the
// rules of SIEVE_FAULT, fails, drops, truncates, corrupts or delays the k-th
// send/receive/connect, or kills/stops this process at that point, so that
// every error path of the layers above is reached by a real test.
//
// Grammar (rules separated by ';', fields by ','):
//   on=send|recv|connect   what the rule counts (default send)
//   do=fail|drop|truncate|corrupt|delay|kill|exit|abort|segv|stop
//   rank=R   only in rank R (default: every rank)
//   peer=P   only operations to/from rank P
//   nth=K    the K-th matching operation, 1-based (default 1)
//   count=C  this many operations from the K-th on (default 1; 0 = all)
//   min=B    only operations of at least B bytes (to skip control messages)
//   size=B   only operations of exactly B bytes
//   ms=D     delay: hold the operation D milliseconds before posting it
//   byte=O   corrupt: flip the byte at offset O (mod the message size); a
//            send from device memory cannot be corrupted here and fails instead
// Example: SIEVE_FAULT="rank=2,on=send,min=4096,nth=40,do=kill".
#ifndef SIEVE_TRANSPORT_FAULT_TRANSPORT_H_
#define SIEVE_TRANSPORT_FAULT_TRANSPORT_H_

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "transport/transport.h"

namespace sieve::transport {

struct FaultRule {
  enum On { kSend, kRecv, kConnect };
  enum Do { kFail, kDrop, kTruncate, kCorrupt, kDelay, kKill, kExit, kAbort, kSegv, kStop };
  On on = kSend;
  Do action = kFail;
  int rank = -1;
  int peer = -1;
  uint64_t nth = 1;
  uint64_t count = 1;  // 0: every operation from the nth on
  size_t min_bytes = 0;
  size_t exact_bytes = SIZE_MAX;
  double delay_s = 0;
  size_t byte = 0;
  uint64_t seen = 0;  // matching operations counted so far
};

// Parses SIEVE_FAULT; keeps only the rules that apply to `rank`. A bad rule
// is an error naming it, so a typo never silently disables a test's fault.
Status ParseFaultRules(const std::string& text, int rank, std::vector<FaultRule>* out);

class FaultTransport : public Transport {
 public:
  FaultTransport(std::unique_ptr<Transport> inner, std::vector<FaultRule> rules);
  ~FaultTransport() override;

  int rank() const override { return inner_->rank(); }
  int size() const override { return inner_->size(); }
  const std::string& LocalAddress() const override { return inner_->LocalAddress(); }
  Status SetPeers(std::vector<PeerAddress> peers) override;
  void Shutdown(double timeout_s, bool force) override { inner_->Shutdown(timeout_s, force); }
  Status Isend(int peer, uint64_t tag, const void* buf, size_t bytes, MemoryType type,
               Request* req) override;
  Status Irecv(int peer, uint64_t tag, void* buf, size_t bytes, MemoryType type,
               Request* req) override;
  // The inner transport's streamed receives, where no rule acts on receives
  // (those rules act on a buffer; the algorithms then receive into one).
  bool StreamsReceives(size_t bytes) const override;
  Status IrecvToSink(int peer, uint64_t tag, ByteSink* sink, size_t bytes, Request* req) override {
    return inner_->IrecvToSink(peer, tag, sink, bytes, req);
  }
  bool Progress() override;
  // The inner transport's wait, cut short when a held operation falls due.
  void WaitForEvents(double timeout_s) override;
  void Cancel(Request* const* reqs, size_t count) override;
  uint64_t completions() const override { return inner_->completions() + own_completions_; }
  std::string PeerFailure(int peer) const override;
  void NotifyPeersOfFailure(uint32_t first_failed_seq, const std::string& what) override {
    inner_->NotifyPeersOfFailure(first_failed_seq, what);
  }
  Notice FailureNotice() override { return inner_->FailureNotice(); }
  // The inner transport's: injecting faults must not change the device path.
  bool SupportsCudaMemory() const override { return inner_->SupportsCudaMemory(); }
  std::string Describe() const override;
  PeerRoute DescribePeer(int peer) override { return inner_->DescribePeer(peer); }

 private:
  // An operation held back by a delay rule until `due`.
  struct Held {
    bool is_send;
    int peer;
    uint64_t tag;
    void* buf;
    size_t bytes;
    MemoryType type;
    Request* req;
    double due;
  };
  // The first rule that fires for this operation, or nullptr.
  FaultRule* Match(FaultRule::On on, int peer, size_t bytes);
  Status Apply(FaultRule& rule, bool is_send, int peer, uint64_t tag, void* buf, size_t bytes,
               MemoryType type, Request* req);
  Status Post(bool is_send, int peer, uint64_t tag, void* buf, size_t bytes, MemoryType type,
              Request* req);

  std::unique_ptr<Transport> inner_;
  std::vector<FaultRule> rules_;
  std::vector<bool> contacted_;          // peers already connected (for on=connect)
  std::vector<std::string> failed_peers_;  // injected connect failures
  std::deque<Held> held_;
  std::deque<std::unique_ptr<std::vector<char>>> corrupted_;  // copies kept until teardown
  uint64_t own_completions_ = 0;
};

}  // namespace sieve::transport

#endif  // SIEVE_TRANSPORT_FAULT_TRANSPORT_H_
