// LoopbackTransport: per-rank mailboxes shared between threads. Only the
// owning thread touches its Requests; other threads only append to its
// mailbox (messages, rendezvous completions) under the mailbox's mutex.
#include "transport/loopback/loopback_transport.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <utility>

#include "core/clock.h"
#include "core/log.h"
#include "transport/tag.h"

namespace sieve::transport {

// A rendezvous send: the receiver reads the sender's buffer when it matches.
struct LoopbackTransport::SendState {
  std::mutex mu;
  const char* buf = nullptr;  // nullptr once withdrawn (cancelled): never read again
  bool read = false;          // the receiver matched it (under mu)
  std::weak_ptr<Endpoint> sender;
  int peer = -1;           // the receiver
  Request* req = nullptr;  // the sender thread's; only it reads this
};

struct LoopbackTransport::Message {
  uint64_t tag = 0;
  size_t bytes = 0;
  std::vector<char> eager;           // an eager message's bytes
  std::shared_ptr<SendState> rndv;   // or the rendezvous to read them from
};

// One rank's mailbox.
struct LoopbackTransport::Endpoint {
  std::mutex mu;
  std::condition_variable cv;  // signalled when something is appended
  std::deque<Message> incoming;
  std::deque<std::shared_ptr<SendState>> read;  // our rendezvous sends, read by their receiver
  std::string closed;  // why this rank left; "" while it is up
};

namespace {

constexpr char kAddressPrefix[] = "loopback:";

// Every live endpoint of the process, by number (the address names it).
struct Registry {
  std::mutex mu;
  uint64_t next = 1;
  std::map<uint64_t, std::weak_ptr<LoopbackTransport::Endpoint>> endpoints;
};
Registry& TheRegistry() {
  static auto* registry = new Registry;  // outlives transports destroyed at exit
  return *registry;
}

// "loopback:<pid>:<number>" -> pid, number.
bool ParseAddress(const std::string& address, long* pid, uint64_t* number) {
  const std::string prefix = kAddressPrefix;
  if (address.compare(0, prefix.size(), prefix) != 0) return false;
  unsigned long long n = 0;
  char tail = 0;
  if (std::sscanf(address.c_str() + prefix.size(), "%ld:%llu%c", pid, &n, &tail) != 2)
    return false;
  *number = n;
  return true;
}

bool Matches(uint64_t tag, uint64_t posted_tag, uint64_t mask) {
  return (tag & mask) == (posted_tag & mask);
}

}  // namespace

Status LoopbackTransport::Create(int rank, int size, std::unique_ptr<Transport>* out) {
  auto self = std::make_shared<Endpoint>();
  std::unique_ptr<LoopbackTransport> t(new LoopbackTransport(rank, size, self));
  out->reset(t.release());
  return Status::OK();
}

LoopbackTransport::LoopbackTransport(int rank, int size, std::shared_ptr<Endpoint> self)
    : rank_(rank), size_(size), self_(std::move(self)) {
  Registry& r = TheRegistry();
  std::lock_guard<std::mutex> lock(r.mu);
  uint64_t number = r.next++;
  r.endpoints[number] = self_;
  address_ = StrFormat("%s%ld:%llu", kAddressPrefix, static_cast<long>(getpid()),
                       static_cast<unsigned long long>(number));
}

LoopbackTransport::~LoopbackTransport() {
  Shutdown(2.0, false);
  long pid = 0;
  uint64_t number = 0;
  if (!ParseAddress(address_, &pid, &number)) return;
  Registry& r = TheRegistry();
  std::lock_guard<std::mutex> lock(r.mu);
  r.endpoints.erase(number);
}

Status LoopbackTransport::SetPeers(std::vector<PeerAddress> peers) {
  if (static_cast<int>(peers.size()) != size_)
    return Status::Internal("address table size differs from the communicator size");
  const long own_pid = static_cast<long>(getpid());
  std::vector<std::shared_ptr<Endpoint>> found(peers.size());
  Registry& r = TheRegistry();
  for (size_t i = 0; i < peers.size(); ++i) {
    long pid = 0;
    uint64_t number = 0;
    if (!ParseAddress(peers[i].address, &pid, &number))
      return Status::InvalidUsage(StrFormat(
          "rank %zu does not use the loopback transport (SIEVE_TRANSPORT differs between ranks)",
          i));
    if (pid != own_pid)
      return Status::InvalidUsage(StrFormat(
          "SIEVE_TRANSPORT=LOOPBACK joins ranks that are threads of one process, but rank %zu "
          "is process %ld and this is process %ld: use SIEVE_TRANSPORT=UCX between processes",
          i, pid, own_pid));
    {
      std::lock_guard<std::mutex> lock(r.mu);
      auto it = r.endpoints.find(number);
      if (it != r.endpoints.end()) found[i] = it->second.lock();
    }
    if (found[i] == nullptr) {
      // It finished joining and left already (as a process that exited right
      // after init): a failed peer, found as such by the operations.
      found[i] = std::make_shared<Endpoint>();
      found[i]->closed = "its communicator was destroyed or aborted before this rank connected";
    }
  }
  peers_ = std::move(found);
  PostNoticeReceive();
  return Status::OK();
}

void LoopbackTransport::Shutdown(double timeout_s, bool force) {
  if (shut_down_) return;
  shut_down_ = true;
  if (!force) {
    // Live peers still reading our last rendezvous sends get them (as UCX's flush).
    const double deadline = MonotonicSeconds() + timeout_s;
    auto unread = [this] {
      for (const auto& state : rendezvous_)
        if (PeerFailure(state->peer).empty()) return true;
      return false;
    };
    while (unread() && MonotonicSeconds() < deadline) {
      if (!Progress()) WaitForEvents(1e-3);
    }
  }
  std::vector<Request*> mine = {&notice_recv_};
  for (auto& req : notices_sent_) mine.push_back(req.get());
  Cancel(mine.data(), mine.size());
  // What is still unread is withdrawn; its Request belongs to a caller that
  // is gone or has cancelled it, so only the buffer pointer is cleared.
  for (auto& state : rendezvous_) {
    std::lock_guard<std::mutex> lock(state->mu);
    state->buf = nullptr;
  }
  rendezvous_.clear();
  posted_.clear();
  unexpected_.clear();
  {
    std::lock_guard<std::mutex> lock(self_->mu);
    self_->closed = force ? "its communicator was aborted" : "its communicator was destroyed";
    self_->incoming.clear();
    self_->read.clear();
  }
  for (auto& peer : peers_) peer->cv.notify_all();  // waiting peers look again sooner
}

Status LoopbackTransport::Isend(int peer, uint64_t tag, const void* buf, size_t bytes,
                                MemoryType type, Request* req) {
  (void)type;  // memcpy either way (see the header)
  if (shut_down_ || peer < 0 || peer >= static_cast<int>(peers_.size()))
    return Status::Internal(StrFormat("rank %d is not a peer of this transport (%zu peers: not "
                                      "connected yet, or shut down)",
                                      peer, peers_.size()));
  *req = Request();
  req->peer = peer;
  req->tag = tag;
  req->bytes = bytes;
  Message m;
  m.tag = tag;
  m.bytes = bytes;
  std::shared_ptr<SendState> state;
  if (bytes <= kEagerBytes) {
    const char* b = static_cast<const char*>(buf);
    m.eager.assign(b, b + bytes);
  } else {
    state = std::make_shared<SendState>();
    state->buf = static_cast<const char*>(buf);
    state->sender = self_;
    state->peer = peer;
    state->req = req;
    m.rndv = state;
  }
  Endpoint& to = *peers_[peer];
  std::string closed;
  {
    std::lock_guard<std::mutex> lock(to.mu);
    closed = to.closed;
    if (closed.empty()) to.incoming.push_back(std::move(m));
  }
  if (!closed.empty()) {
    req->state = Request::kFailed;
    req->error = closed;
    return Status::RemoteError(StrFormat("rank %d is unreachable: %s", peer, closed.c_str()));
  }
  to.cv.notify_all();
  if (state == nullptr) {
    req->state = Request::kDone;
    ++completions_;
  } else {
    req->state = Request::kPending;
    req->impl = state.get();
    rendezvous_.push_back(std::move(state));
  }
  return Status::OK();
}

Status LoopbackTransport::Irecv(int peer, uint64_t tag, void* buf, size_t bytes, MemoryType type,
                                Request* req) {
  (void)type;
  return Receive(peer, tag, buf, nullptr, bytes, req);
}

Status LoopbackTransport::IrecvToSink(int peer, uint64_t tag, ByteSink* sink, size_t bytes,
                                      Request* req) {
  return Receive(peer, tag, nullptr, sink, bytes, req);
}

Status LoopbackTransport::Receive(int peer, uint64_t tag, void* buf, ByteSink* sink, size_t bytes,
                                  Request* req) {
  *req = RecvRequest(peer, tag, bytes);
  if (shut_down_) {
    req->state = Request::kFailed;
    req->error = "the transport was shut down";
    return Status::SystemError(StrFormat("receive failed: %s", req->error.c_str()))
        .WithContext(StrFormat("rank %d", peer));
  }
  return PostRecv(buf, bytes, tag, ~uint64_t{0}, req, sink);
}

Status LoopbackTransport::PostRecv(void* buf, size_t bytes, uint64_t tag, uint64_t mask,
                                   Request* req, ByteSink* sink) {
  req->state = Request::kPending;
  PostedRecv recv{req, static_cast<char*>(buf), sink, bytes, tag, mask};
  for (auto it = unexpected_.begin(); it != unexpected_.end();) {
    if (!Matches(it->tag, tag, mask)) {
      ++it;
      continue;
    }
    Message m = std::move(*it);
    it = unexpected_.erase(it);
    if (Deliver(m, recv)) return Status::OK();
  }
  posted_.push_back(recv);
  req->impl = &posted_.back();
  return Status::OK();
}

void LoopbackTransport::PostNoticeReceive() {
  notice_recv_ = Request();
  notice_recv_.is_recv = true;
  (void)PostRecv(notice_buffer_, kNoticeBytes - 1, NoticeTag(0), kNoticeTagMask, &notice_recv_);
}

void LoopbackTransport::Arrive(Message m) {
  for (auto it = posted_.begin(); it != posted_.end(); ++it) {
    if (!Matches(m.tag, it->tag, it->mask)) continue;
    PostedRecv recv = *it;
    if (Deliver(m, recv)) posted_.erase(it);
    return;  // delivered, or a withdrawn rendezvous: dropped
  }
  if (m.rndv != nullptr) {
    std::lock_guard<std::mutex> lock(m.rndv->mu);
    if (m.rndv->buf == nullptr) return;
  }
  unexpected_.push_back(std::move(m));
}

namespace {

// Hands a message to a streamed receive's sink the way UCX may: in pieces of
// an odd length (elements straddle them), each at an odd address, the last
// piece first (the fragments of one message can complete out of order).
void Stream(ByteSink* sink, const char* data, size_t bytes) {
  constexpr size_t kPiece = 4093;
  std::vector<char> bounce(kPiece + 1);
  auto give = [&](size_t i) {
    const size_t offset = i * kPiece, len = std::min(kPiece, bytes - offset);
    std::memcpy(bounce.data() + 1, data + offset, len);
    sink->Consume(offset, bounce.data() + 1, len);
  };
  const size_t pieces = (bytes + kPiece - 1) / kPiece;
  if (pieces == 0) return;
  give(pieces - 1);
  for (size_t i = 0; i + 1 < pieces; ++i) give(i);
}

}  // namespace

void LoopbackTransport::Place(const PostedRecv& recv, const char* data, size_t bytes) {
  if (bytes == 0) return;
  if (recv.sink != nullptr)
    Stream(recv.sink, data, bytes);
  else
    std::memcpy(recv.buf, data, bytes);
}

bool LoopbackTransport::Deliver(Message& m, const PostedRecv& recv) {
  const bool fits = m.bytes <= recv.bytes;
  if (m.rndv == nullptr) {
    if (fits) Place(recv, m.eager.data(), m.bytes);
  } else {
    {
      std::lock_guard<std::mutex> lock(m.rndv->mu);
      if (m.rndv->buf == nullptr) return false;
      // A truncated rendezvous completes the send too (as over UCX).
      if (fits) Place(recv, m.rndv->buf, m.bytes);
      m.rndv->read = true;
    }
    if (std::shared_ptr<Endpoint> sender = m.rndv->sender.lock()) {
      {
        std::lock_guard<std::mutex> lock(sender->mu);
        if (sender->closed.empty()) sender->read.push_back(m.rndv);
      }
      sender->cv.notify_all();
    }
  }
  Request* req = recv.req;
  req->received_bytes = m.bytes;
  if (fits) {
    req->state = Request::kDone;
  } else {
    req->state = Request::kFailed;
    req->truncated = true;
    req->error = "message longer than the posted receive";
  }
  Complete(req);
  return true;
}

void LoopbackTransport::Complete(Request* req) {
  req->impl = nullptr;
  ++completions_;
}

bool LoopbackTransport::Progress() {
  std::deque<Message> arrived;
  std::deque<std::shared_ptr<SendState>> read;
  {
    std::lock_guard<std::mutex> lock(self_->mu);
    arrived.swap(self_->incoming);
    read.swap(self_->read);
  }
  for (Message& m : arrived) Arrive(std::move(m));
  for (const auto& state : read) {
    auto it = std::find(rendezvous_.begin(), rendezvous_.end(), state);
    if (it == rendezvous_.end()) continue;  // cancelled meanwhile: already completed
    rendezvous_.erase(it);
    state->req->state = Request::kDone;
    Complete(state->req);
  }
  return !arrived.empty() || !read.empty();
}

void LoopbackTransport::WaitForEvents(double timeout_s) {
  std::unique_lock<std::mutex> lock(self_->mu);
  self_->cv.wait_for(lock, std::chrono::duration<double>(std::max(0.0, std::min(timeout_s, 1.0))),
                     [this] { return !self_->incoming.empty() || !self_->read.empty(); });
}

void LoopbackTransport::Cancel(Request* const* reqs, size_t count) {
  for (size_t i = 0; i < count; ++i) {
    Request* req = reqs[i];
    if (req->state != Request::kPending || req->impl == nullptr) continue;
    if (req->is_recv) {
      auto it = std::find_if(posted_.begin(), posted_.end(),
                             [req](const PostedRecv& r) { return r.req == req; });
      if (it == posted_.end()) continue;
      posted_.erase(it);
      req->state = Request::kFailed;
      req->error = "cancelled";
    } else {
      auto it = std::find_if(rendezvous_.begin(), rendezvous_.end(),
                             [req](const auto& s) { return s->req == req; });
      if (it == rendezvous_.end()) continue;
      {
        std::lock_guard<std::mutex> lock((*it)->mu);
        if ((*it)->read) {
          req->state = Request::kDone;  // its completion was on its way
        } else {
          (*it)->buf = nullptr;  // withdrawn: the receiver skips it
          req->state = Request::kFailed;
          req->error = "cancelled";
        }
      }
      rendezvous_.erase(it);
    }
    Complete(req);
  }
}

std::string LoopbackTransport::PeerFailure(int peer) const {
  if (peer < 0 || peer >= static_cast<int>(peers_.size())) return "";
  Endpoint& p = *peers_[peer];
  std::lock_guard<std::mutex> lock(p.mu);
  return p.closed;
}

void LoopbackTransport::NotifyPeersOfFailure(uint32_t first_failed_seq, const std::string& what) {
  if (notice_body_ || peers_.empty() || shut_down_) return;  // one notice per communicator
  notice_body_ = std::make_unique<std::string>(EncodeNotice(first_failed_seq, rank_, what));
  for (int peer = 0; peer < size_; ++peer) {
    if (peer == rank_ || !PeerFailure(peer).empty()) continue;
    auto req = std::make_unique<Request>();
    // At most kNoticeBytes: eager, so complete once posted.
    if (Isend(peer, NoticeTag(rank_), notice_body_->data(), notice_body_->size(),
              MemoryType::kHost, req.get())
            .ok())
      notices_sent_.push_back(std::move(req));
  }
}

Transport::Notice LoopbackTransport::FailureNotice() {
  if (notice_recv_.state == Request::kDone) {
    TakeNotice(notice_buffer_, notice_recv_.received_bytes, &notice_);
    PostNoticeReceive();  // each peer may send one: keep listening for an earlier one
  }
  return notice_;
}

std::string LoopbackTransport::Describe() const {
  return StrFormat(
      "loopback (%d ranks as threads of process %ld; messages up to %zu bytes are copied when "
      "sent, larger ones when the receiver matches them)",
      size_, static_cast<long>(getpid()), kEagerBytes);
}

PeerRoute LoopbackTransport::DescribePeer(int peer) {
  PeerRoute route;
  if (peer < 0 || peer >= static_cast<int>(peers_.size()) || peer == rank_) return route;
  route.lanes = "loopback";
  route.shared_memory = true;
  return route;
}

}  // namespace sieve::transport
