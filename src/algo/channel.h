// Channel: the messages of one operation. Algorithms post sends/receives to
// ranks through it and wait; it builds the tags (sender, op seq, per-peer
// message index), tells the transport where each buffer lives, and turns
// stalls, failures and size mismatches into errors that name the operation
// and the peers concerned.
#ifndef SIEVE_ALGO_CHANNEL_H_
#define SIEVE_ALGO_CHANNEL_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "algo/op_header.h"
#include "transport/transport.h"
#include "transport/wait.h"

namespace sieve::algo {

class Channel {
 public:
  using Handle = size_t;

  // Per-peer message counters; point-to-point traffic keeps one set for the
  // communicator's lifetime so sends and receives match in order across calls.
  struct Counters {
    std::vector<uint32_t> send, recv;
  };

  // Bytes this rank sent and received, accumulated by every channel of a communicator.
  struct Traffic {
    uint64_t sent = 0;
    uint64_t received = 0;
  };

  // What a collective's channel checks with every peer (algo/op_header.h),
  // and where it reports the outcome to its communicator.
  struct OpControl {
    OpFingerprint fingerprint;
    uint32_t* completed_seq = nullptr;  // raised to seq + 1 when every rank succeeded
    bool* mismatch = nullptr;           // set when ranks called different collectives
    bool agree = true;                  // exchange verdicts (SIEVE_AGREEMENT)
  };

  // `name` ("allreduce #12") prefixes every error. A collective gets fresh
  // counters; p2p passes the communicator's (and uses its own tag space).
  // With `control`, the fingerprint goes to every peer (every member, with
  // `members`) now and Conclude() must end the operation. Non-empty `members`:
  // SetMembers(members) (a communicator view's channel).
  //
  // `memory`: where every buffer an algorithm hands to Send and Recv lives,
  // as the operation's creator knows it (host buffers and staging: host; the
  // direct path: device, for the caller's buffers and the codec's scratch
  // alike). An operation's data never spans both, so the algorithms pass
  // buffers only and never decide the type. Control messages are the
  // channel's own host memory.
  Channel(transport::Transport* transport, uint32_t seq, std::string name,
          transport::WaitOptions wait, Traffic* traffic, Counters* p2p_counters = nullptr,
          const OpControl* control = nullptr, std::vector<int> members = {},
          transport::MemoryType memory = transport::MemoryType::kHost);
  ~Channel();  // cancels whatever is still pending (after an error)
  Channel(const Channel&) = delete;
  Channel& operator=(const Channel&) = delete;

  // Restricts the channel to `members` (ascending ranks of the communicator,
  // this rank among them): peers, rank() and size() are then positions in that
  // list, so an algorithm written for ranks 0..n-1 runs among a subset.
  // REQUIRES: no message posted yet.
  void SetMembers(std::vector<int> members);

  int rank() const { return members_.empty() ? transport_->rank() : position_; }
  int size() const {
    return members_.empty() ? transport_->size() : static_cast<int>(members_.size());
  }
  const std::string& name() const { return name_; }
  transport::MemoryType memory() const { return memory_; }

  // Posts a message of memory(); a collective's zero-byte messages are skipped
  // on both sides alike, point-to-point ones are posted.
  Status Send(int peer, const void* buf, size_t bytes, Handle* handle = nullptr);
  Status Recv(int peer, void* buf, size_t bytes, Handle* handle = nullptr);
  // Whether a receive of `bytes` may use RecvToSink: host memory, and the
  // transport streams a message of that size (Transport::StreamsReceives).
  bool StreamsReceives(size_t bytes) const {
    return memory_ == transport::MemoryType::kHost && transport_->StreamsReceives(bytes);
  }
  // Posts a receive whose bytes go to `sink` as they arrive (a message that is
  // longer fails it; Wait checks the size as for Recv). `sink` must outlive
  // the message. REQUIRES: StreamsReceives(bytes).
  Status RecvToSink(int peer, transport::ByteSink* sink, size_t bytes, Handle* handle = nullptr);
  // Waits for one posted message; a receive must get exactly the posted size.
  Status Wait(Handle handle);
  // Makes Wait also end on `control`'s failures (a call's control channel: a
  // peer that called something else, or reported failure), for channels a
  // codec blocks on inside a call driven with WaitUntil (the subnet groups'
  // scale agreement). `control` must outlive this channel's waits.
  void Watch(Channel* control) { watched_ = control; }
  // Waits for everything posted so far.
  Status WaitAll();
  // Whether a posted message / everything posted so far is complete (no
  // progress is made; Wait() still accounts for it and reports its errors).
  bool Done(Handle handle) const;
  bool AllDone() const;

  // Progresses until done() holds, watching the peers of every channel given
  // (failures and timeouts name the channel and the peer): for drivers that
  // interleave several channels of one communicator. REQUIRES: non-empty.
  static Status WaitUntil(const std::vector<Channel*>& channels, const std::function<bool()>& done);

  // Says "ok" to every peer before Conclude, where this rank's part can no
  // longer fail: every message posted on the channel has completed whole and the
  // fingerprints all match (the caller checked that what is left is local work
  // that cannot fail: the codec's decoding and delivery on the host). The
  // verdict then travels while this rank finishes that work, and Conclude(OK)
  // only waits for the peers'. Returns false, and sends nothing, where anything
  // is still pending or went wrong: Conclude decides as before.
  // REQUIRES: every message of the call has been posted on this channel.
  bool Vouch();

  // Ends a collective with agreement: given this rank's data-phase outcome,
  // returns OK only when every peer called the same collective (fingerprints
  // match) and every peer still alive reported success; otherwise an error,
  // and this rank's "failed" verdict goes to every peer so none of them
  // reports success. Without control, returns `data` unchanged.
  Status Conclude(Status data);

  // Waits for every peer's fingerprint (not the verdicts) and says whether they all match
  // this rank's: for a call whose steps run on other channels (the hierarchical plan's
  // host and cross views), checked before data crosses hosts. OK without control.
  Status AwaitFingerprints();

 private:
  int Global(int peer) const { return members_.empty() ? peer : members_[peer]; }
  // Recv (into buf) or RecvToSink (to sink).
  Status PostReceive(int peer, void* buf, transport::ByteSink* sink, size_t bytes, Handle* handle);
  // The request a Send or Recv posts (its index in *handle when handle is set), or nullptr for
  // a collective's zero-byte transfer, which is recorded as already done and posts nothing.
  transport::Request* AddRequest(size_t bytes, Handle* handle);
  struct Control;
  void StartControl(const OpControl& spec);
  // The other ranks this channel talks to (global ranks; the members if set).
  std::vector<int> OtherRanks() const;
  // Fingerprints or verdicts received so far: a mismatch or a peer's failure.
  Status ControlFailures();
  // Waits until every live peer's control message of one kind has arrived
  // and our own control sends are done.
  Status WaitControl(bool verdicts);
  void SendVerdict(bool ok);
  // Progresses (at most 50 ms) while a gone peer's receive in `recvs` is
  // pending: what it sent before leaving may still be queued for us.
  void DrainFromGone(const std::vector<transport::Request*>& recvs);
  // A failure notice received for this operation or an earlier one.
  bool NoticeCoversThis();
  bool PeerGone(int peer) const;
  Status Check(const transport::Request& req) const;
  // Returns st; when it is an error, first cancels every pending data message.
  Status Failed(Status st);
  Status PeerFailures();
  bool AnyReceivePending() const;
  std::string DescribePending() const;

  transport::Transport* transport_;
  Channel* watched_ = nullptr;  // Watch()
  uint32_t seq_;
  bool p2p_;
  transport::MemoryType memory_;
  std::string name_;
  transport::WaitOptions wait_;
  std::deque<transport::Request> requests_;  // deque: stable addresses for the transport
  Traffic* traffic_;
  Counters own_counters_;
  Counters* counters_;
  size_t first_unwaited_ = 0;
  std::vector<int> members_;  // empty: every rank of the communicator
  int position_ = 0;          // this rank's index in members_
  std::unique_ptr<Control> control_;
};

}  // namespace sieve::algo

#endif  // SIEVE_ALGO_CHANNEL_H_
