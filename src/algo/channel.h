// Channel: the messages of one operation. Algorithms post sends/receives to
// ranks through it and wait; it builds the tags (sender, op seq, per-peer
// message index) and turns stalls, failures and size mismatches into errors
// that name the operation and the peers concerned.
#ifndef SIEVE_ALGO_CHANNEL_H_
#define SIEVE_ALGO_CHANNEL_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <string>
#include <vector>

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

  // `name` ("allreduce #12") prefixes every error. A collective gets fresh
  // counters; p2p passes the communicator's (and uses its own tag space).
  // Non-empty `members`: SetMembers(members) (a communicator view's channel).
  Channel(transport::Transport* transport, uint32_t seq, std::string name,
          transport::WaitOptions wait, Traffic* traffic, Counters* p2p_counters = nullptr,
          std::vector<int> members = {});
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

  // Posts a message; zero-byte messages are skipped on both sides alike.
  Status Send(int peer, const void* buf, size_t bytes, Handle* handle = nullptr);
  Status Recv(int peer, void* buf, size_t bytes, Handle* handle = nullptr);
  // Waits for one posted message; a receive must get exactly the posted size.
  Status Wait(Handle handle);
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

 private:
  int Global(int peer) const { return members_.empty() ? peer : members_[peer]; }
  Status Check(const transport::Request& req) const;
  Status PeerFailures();
  bool AnyReceivePending() const;
  std::string DescribePending() const;

  transport::Transport* transport_;
  uint32_t seq_;
  bool p2p_;
  std::string name_;
  transport::WaitOptions wait_;
  std::deque<transport::Request> requests_;  // deque: stable addresses for the transport
  Traffic* traffic_;
  Counters own_counters_;
  Counters* counters_;
  size_t first_unwaited_ = 0;
  std::vector<int> members_;  // empty: every rank of the communicator
  int position_ = 0;          // this rank's index in members_
};

}  // namespace sieve::algo

#endif  // SIEVE_ALGO_CHANNEL_H_
