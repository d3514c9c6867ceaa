// Channel implementation: tag construction, waits with named errors.
#include "algo/channel.h"

#include <set>

#include "algo/channel_control.h"
#include "core/log.h"
#include "transport/tag.h"

namespace sieve::algo {

using transport::Request;

Channel::Channel(transport::Transport* transport, uint32_t seq, std::string name,
                 transport::WaitOptions wait, Traffic* traffic, Counters* p2p_counters,
                 const OpControl* control, std::vector<int> members,
                 transport::MemoryType memory)
    : transport_(transport),
      seq_(seq),
      p2p_(p2p_counters != nullptr),
      memory_(memory),
      name_(std::move(name)),
      wait_(std::move(wait)),
      traffic_(traffic),
      counters_(p2p_counters != nullptr ? p2p_counters : &own_counters_) {
  counters_->send.resize(transport->size(), 0);
  counters_->recv.resize(transport->size(), 0);
  wait_.check_peers = [this] { return PeerFailures(); };
  wait_.describe_pending = [this] { return DescribePending(); };
  if (!members.empty()) SetMembers(std::move(members));
  if (control != nullptr) StartControl(*control);
}

Channel::~Channel() {
  std::vector<Request*> pending;
  for (Request& req : requests_)
    if (req.state == Request::kPending) pending.push_back(&req);
  if (control_)
    for (Request& req : control_->requests)
      if (req.state == Request::kPending) pending.push_back(&req);
  if (!pending.empty()) transport_->Cancel(pending.data(), pending.size());
}

void Channel::SetMembers(std::vector<int> members) {
  members_ = std::move(members);
  for (size_t i = 0; i < members_.size(); ++i)
    if (members_[i] == transport_->rank()) position_ = static_cast<int>(i);
}

Request* Channel::AddRequest(size_t bytes, Handle* handle) {
  requests_.emplace_back();
  if (handle != nullptr) *handle = requests_.size() - 1;
  Request& req = requests_.back();
  // Point-to-point posts zero-byte messages too: a zero-byte send still pairs
  // with its receive (as in NCCL), so a size mismatch is seen, not a shift.
  if (bytes != 0 || p2p_) return &req;
  req.state = Request::kDone;
  return nullptr;
}

Status Channel::Send(int peer, const void* buf, size_t bytes, Handle* handle) {
  peer = Global(peer);
  Request* req = AddRequest(bytes, handle);
  if (req == nullptr) return Status::OK();
  uint64_t tag = transport::MakeTag(transport_->rank(), p2p_, seq_,
                                    transport::DataIndex(counters_->send[peer]++));
  if (traffic_ != nullptr) traffic_->sent += bytes;
  SIEVE_TRACE(kLogNet, "%s: send %zu bytes (%s memory) to rank %d tag 0x%lx", name_.c_str(), bytes,
              transport::MemoryTypeName(memory_), peer, static_cast<unsigned long>(tag));
  return Failed(transport_->Isend(peer, tag, buf, bytes, memory_, req).WithContext(name_));
}

Status Channel::Recv(int peer, void* buf, size_t bytes, Handle* handle) {
  return PostReceive(peer, buf, nullptr, bytes, handle);
}

Status Channel::RecvToSink(int peer, transport::ByteSink* sink, size_t bytes, Handle* handle) {
  return PostReceive(peer, nullptr, sink, bytes, handle);
}

Status Channel::PostReceive(int peer, void* buf, transport::ByteSink* sink, size_t bytes,
                            Handle* handle) {
  peer = Global(peer);
  Request* req = AddRequest(bytes, handle);
  if (req == nullptr) return Status::OK();
  uint64_t tag =
      transport::MakeTag(peer, p2p_, seq_, transport::DataIndex(counters_->recv[peer]++));
  SIEVE_TRACE(kLogNet, "%s: recv %zu bytes (%s memory%s) from rank %d tag 0x%lx", name_.c_str(),
              bytes, transport::MemoryTypeName(memory_), sink ? ", streamed" : "", peer,
              static_cast<unsigned long>(tag));
  Status st = sink ? transport_->IrecvToSink(peer, tag, sink, bytes, req)
                   : transport_->Irecv(peer, tag, buf, bytes, memory_, req);
  return Failed(st.WithContext(name_));
}

Status Channel::Check(const Request& req) const {
  // A send that failed because its peer is gone does not fail an operation
  // whose receives are all complete: everything we needed has arrived (a peer
  // that finished and exited first may not have acknowledged our last sends).
  if (req.state == Request::kFailed && !req.is_recv && !AnyReceivePending() &&
      !transport_->PeerFailure(req.peer).empty())
    return Status::OK();
  if (req.state == Request::kFailed && req.truncated) {
    // As a short message below: the peer is fine, the sizes differ. The
    // message was consumed whole, so nothing of it is left to match later.
    if (control_ && control_->spec.mismatch != nullptr) *control_->spec.mismatch = true;
    return Status::InvalidUsage(StrFormat(
        "%s: rank %d sent %s bytes where %zu were expected: ranks called this operation with "
        "different arguments",
        name_.c_str(), req.peer,
        req.received_bytes > req.bytes ? std::to_string(req.received_bytes).c_str() : "more",
        req.bytes));
  }
  if (req.state == Request::kFailed) {
    std::string failure = transport_->PeerFailure(req.peer);
    return Status::RemoteError(StrFormat("%s: %s rank %d failed: %s", name_.c_str(),
                                         req.is_recv ? "receive from" : "send to", req.peer,
                                         (failure.empty() ? req.error : failure).c_str()));
  }
  if (req.is_recv && req.received_bytes != req.bytes) {
    // A collective's peers disagree about its messages: what is still in
    // flight could match a later operation, so the communicator is unusable.
    if (control_ && control_->spec.mismatch != nullptr) *control_->spec.mismatch = true;
    return Status::InvalidUsage(StrFormat(
        "%s: rank %d sent %zu bytes where %zu were expected: ranks called this operation with "
        "different arguments",
        name_.c_str(), req.peer, req.received_bytes, req.bytes));
  }
  return Status::OK();
}

Status Channel::Wait(Handle handle) {
  Request& req = requests_[handle];
  const auto done = [&req] { return req.state != Request::kPending; };
  Status st = watched_ != nullptr ? WaitUntil({this, watched_}, done)  // names the channel
                                  : transport::ProgressUntil(transport_, done, wait_)
                                        .WithContext(name_);
  if (!st.ok()) return Failed(st);
  if (req.is_recv && req.state == Request::kDone && !req.counted && traffic_ != nullptr) {
    traffic_->received += req.received_bytes;
    req.counted = true;
  }
  return Failed(Check(req));
}

Status Channel::Failed(Status st) {
  if (st.ok()) return st;
  // The algorithm frees its buffers when the error reaches it: nothing may
  // still read or write them, so every pending data message is withdrawn now.
  std::vector<Request*> pending;
  for (Request& req : requests_)
    if (req.state == Request::kPending) pending.push_back(&req);
  if (!pending.empty()) transport_->Cancel(pending.data(), pending.size());
  return st;
}

Status Channel::WaitAll() {
  for (; first_unwaited_ < requests_.size(); ++first_unwaited_)
    SIEVE_RETURN_IF_ERROR(Wait(first_unwaited_));
  return Status::OK();
}

bool Channel::Done(Handle handle) const { return requests_[handle].state != Request::kPending; }

bool Channel::AllDone() const {
  for (size_t i = first_unwaited_; i < requests_.size(); ++i)
    if (requests_[i].state == Request::kPending) return false;
  return true;
}

Status Channel::WaitUntil(const std::vector<Channel*>& channels,
                          const std::function<bool()>& done) {
  transport::WaitOptions wait = channels.front()->wait_;  // timeout and abort flag
  wait.check_peers = [&channels]() -> Status {
    for (Channel* ch : channels) {
      Status st = ch->PeerFailures();
      if (!st.ok()) return st.WithContext(ch->name_);
    }
    return Status::OK();
  };
  wait.describe_pending = [&channels] {
    std::string out;
    for (Channel* ch : channels) {
      std::string pending = ch->DescribePending();
      if (!pending.empty()) out += (out.empty() ? "" : "; ") + ch->name_ + ": " + pending;
    }
    return out;
  };
  return transport::ProgressUntil(channels.front()->transport_, done, wait);
}

bool Channel::AnyReceivePending() const {
  for (const Request& req : requests_)
    if (req.is_recv && req.state == Request::kPending) return true;
  return false;
}

Status Channel::PeerFailures() {
  // A notice about a later collective than ours (its sender finished ours)
  // does not fail this one: every rank must reach the same verdict for it.
  // Fingerprints that differ come first: they name the cause of a failure
  // another rank may be reporting.
  if (control_) SIEVE_RETURN_IF_ERROR(ControlFailures());
  transport::Transport::Notice notice = transport_->FailureNotice();
  if (notice.received && (p2p_ || static_cast<int32_t>(notice.first_failed_seq - seq_) <= 0))
    return Status::RemoteError(notice.text);
  bool receiving = AnyReceivePending();
  for (Request& req : requests_) {
    if (req.state != Request::kPending) continue;
    std::string failure = transport_->PeerFailure(req.peer);
    if (failure.empty()) continue;
    if (req.is_recv || receiving)
      return Status::RemoteError(StrFormat("rank %d failed: %s", req.peer, failure.c_str()));
    // All our data is in; the peer left before acknowledging this send.
    Request* abandoned = &req;
    transport_->Cancel(&abandoned, 1);
    req.state = Request::kFailed;
    SIEVE_INFO(kLogNet,
               "%s: rank %d left before acknowledging a send (%s); nothing is missing here",
               name_.c_str(), req.peer, failure.c_str());
  }
  return Status::OK();
}

std::string Channel::DescribePending() const {
  std::set<int> recv_peers, send_peers;
  for (const Request& req : requests_) {
    if (req.state != Request::kPending) continue;
    (req.is_recv ? recv_peers : send_peers).insert(req.peer);
  }
  std::string out;
  for (int p : recv_peers) out += StrFormat("%srank %d (receive)", out.empty() ? "" : ", ", p);
  for (int p : send_peers) out += StrFormat("%srank %d (send)", out.empty() ? "" : ", ", p);
  if (control_) {
    for (size_t p = 0; p < control_->verdict_recv.size(); ++p) {
      const Request* fp = control_->fingerprint_recv[p];
      const Request* v = control_->verdict_recv[p];
      if (fp != nullptr && fp->state == Request::kPending)
        out += StrFormat("%srank %zu (fingerprint)", out.empty() ? "" : ", ", p);
      else if (v != nullptr && v->state == Request::kPending && control_->verdict_sent)
        out += StrFormat("%srank %zu (verdict)", out.empty() ? "" : ", ", p);
    }
  }
  return out;
}

}  // namespace sieve::algo
