// Bootstrap root: one poll() loop serves every connection concurrently. A connection gets a
// challenge on accept and must send an authenticated hello before its handshake deadline; the
// root never blocks on one peer, so stray, silent or slow connections cost the job nothing.
#include "transport/bootstrap/root_server.h"

#include <poll.h>

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <system_error>
#include <thread>

#include "core/log.h"

namespace sieve::transport {

namespace {

static_assert(kSecretBytes == kJobSecretBytes, "the id carries the wire's job secret");

// Unauthenticated connections held at once; beyond this the oldest is closed.
constexpr size_t kMaxPendingHandshakes = 512;
// How long finished replies may take to drain after an error.
constexpr double kErrorFlushS = 5.0;

// Tells a rank in the root's process when the root thread has finished.
class RootLife {
 public:
  void MarkDone() {
    std::lock_guard<std::mutex> lock(mu_);
    done_ = true;
    cv_.notify_all();
  }
  void WaitDone(Deadline deadline) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_until(lock, deadline, [this] { return done_; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
};

// Live roots of this process by id. Never destroyed: detached root threads may outlive main.
struct Registry {
  std::mutex mu;
  std::map<std::string, std::shared_ptr<RootLife>> roots;
};
Registry& Roots() {
  static Registry* registry = new Registry;
  return *registry;
}

// "rank 3 of 8" / "ranks 3, 5 of 8" (at most 16 listed).
std::string MissingRanksText(const std::vector<int>& missing, int nranks) {
  std::string text = missing.size() == 1 ? "rank " : "ranks ";
  for (size_t i = 0; i < missing.size() && i < 16; ++i)
    text += (i ? ", " : "") + std::to_string(missing[i]);
  if (missing.size() > 16) text += StrFormat(" and %zu more", missing.size() - 16);
  return text + StrFormat(" of %d", nranks);
}

// One accepted connection.
struct Conn {
  Socket sock;
  std::string peer;  // "ip:port", for log lines
  Deadline hello_deadline;
  Challenge challenge;
  std::string in;  // hello bytes received so far
  size_t need = kFramePrefixBytes;
  bool have_header = false;
  HelloHeader header;
  int rank = -1;  // >= 0 once joined (authenticated, registered, waiting for the table)
  PeerInfo info;
  // Bytes to send: the challenge, later the reply (header + shared body). Closed once sent
  // when `answered`.
  std::string out;
  std::shared_ptr<const std::string> out_body;
  size_t sent = 0;
  bool answered = false;
  bool dead = false;
  size_t OutBytes() const { return out.size() + (out_body ? out_body->size() : 0); }
  bool Pending() const { return rank < 0 && !answered; }
};

class RootServer {
 public:
  RootServer(Socket listener, const UniqueId& id, const BootstrapTimeouts& t, std::string where,
             std::shared_ptr<RootLife> life)
      : listener_(std::move(listener)), timeouts_(t), where_(std::move(where)),
        life_(std::move(life)) {
    std::memcpy(secret_, id.secret, kSecretBytes);
  }
  void Run();

 private:
  enum class Phase { kCollecting, kFailed, kClosing };

  void CheckProgress(Deadline now);
  void PollOnce();
  void AcceptPending();
  void ReadFrom(Conn* c);
  void ReadHello(Conn* c);
  bool AdvanceHello(Conn* c);
  void Admit(Conn* c);
  std::string Conflict(const HelloHeader& h, const std::string& peer) const;
  void Fail(const std::string& why, Conn* c);
  void Answer(Conn* c, ReplyKind kind, std::shared_ptr<const std::string> body);
  void AnswerJoined(ReplyKind kind, const std::string& body);
  void BeginClosing(double flush_s);
  void Flush(Conn* c);
  void Drop(Conn* c, const std::string& why);
  void ExpireSilent(Deadline now);
  void Reap();
  std::string TimeoutMessage() const;

  Socket listener_;
  uint8_t secret_[kSecretBytes];
  BootstrapTimeouts timeouts_;
  std::string where_;  // listening address, for log lines
  std::shared_ptr<RootLife> life_;
  Phase phase_ = Phase::kCollecting;
  Deadline job_deadline_;
  Deadline flush_deadline_;
  std::vector<std::unique_ptr<Conn>> conns_;
  int nranks_ = -1;  // from the first accepted hello
  int first_rank_ = -1;
  std::vector<Conn*> by_rank_;
  int joined_ = 0;
  int expected_ = 0;  // largest valid nranks claimed by an authenticated hello
  int answered_ = 0;  // authenticated connections given a reply
  std::string failure_;
  std::string version_note_;  // a peer that spoke another protocol version
  bool accept_warned_ = false;
};

void RootServer::Run() {
  job_deadline_ = DeadlineIn(timeouts_.job_s);
  for (;;) {
    auto now = std::chrono::steady_clock::now();
    CheckProgress(now);
    if (phase_ == Phase::kClosing && (conns_.empty() || now >= flush_deadline_)) break;
    PollOnce();
    ExpireSilent(std::chrono::steady_clock::now());
    Reap();
  }
  for (const auto& c : conns_) {
    SIEVE_WARN("bootstrap root %s: %s at %s did not take its reply in time", where_.c_str(),
               c->rank >= 0 ? StrFormat("rank %d", c->rank).c_str() : "a rank", c->peer.c_str());
  }
  life_->MarkDone();
}

// Moves between phases: all joined -> table; job deadline -> error; failed job answered -> done.
void RootServer::CheckProgress(Deadline now) {
  if (phase_ == Phase::kCollecting && nranks_ > 0 && joined_ == nranks_) {
    SIEVE_INFO(kLogBootstrap, "bootstrap root %s: all %d ranks joined", where_.c_str(), nranks_);
    std::vector<PeerInfo> table;
    for (const Conn* c : by_rank_) table.push_back(c->info);
    AnswerJoined(ReplyKind::kTable, EncodeTable(table));
    BeginClosing(timeouts_.job_s);
  } else if (phase_ == Phase::kCollecting && now >= job_deadline_) {
    std::string msg = TimeoutMessage();
    SIEVE_WARN("bootstrap root %s: %s", where_.c_str(), msg.c_str());
    AnswerJoined(ReplyKind::kError, msg);
    BeginClosing(kErrorFlushS);
  } else if (phase_ == Phase::kFailed &&
             (now >= job_deadline_ || (expected_ > 0 && answered_ >= expected_))) {
    BeginClosing(kErrorFlushS);
  }
}

// Sleeps until a socket is ready or the next deadline, then serves what is ready.
void RootServer::PollOnce() {
  Deadline wake = phase_ == Phase::kClosing ? flush_deadline_ : job_deadline_;
  std::vector<pollfd> fds;
  if (listener_.valid()) fds.push_back({listener_.fd(), POLLIN, 0});
  const size_t first = fds.size();
  for (const auto& c : conns_) {
    short events = c->answered ? 0 : POLLIN;
    if (c->sent < c->OutBytes()) events |= POLLOUT;
    fds.push_back({c->sock.fd(), events, 0});
    if (c->Pending()) wake = std::min(wake, c->hello_deadline);
  }
  int rc = poll(fds.data(), fds.size(), PollTimeoutMs(wake));
  if (rc <= 0) return;  // timeout or EINTR: the caller checks deadlines
  const size_t n = conns_.size();  // AcceptPending appends; serve only those polled
  for (size_t i = 0; i < n; ++i) {
    Conn* c = conns_[i].get();
    short ev = fds[first + i].revents;
    if (ev == 0 || c->dead) continue;
    if (ev & POLLOUT) Flush(c);
    if (!c->dead && !c->answered && (ev & (POLLIN | POLLHUP | POLLERR))) ReadFrom(c);
    if (!c->dead && c->answered && (ev & (POLLHUP | POLLERR))) Flush(c);
  }
  if (first == 1 && fds[0].revents != 0) AcceptPending();
}

void RootServer::AcceptPending() {
  for (;;) {
    Socket sock;
    sockaddr_storage peer{};
    Status st = Accept(listener_, &sock, &peer);
    if (!st.ok()) {
      // Typically fd exhaustion: keep serving the connections already open.
      if (!accept_warned_) SIEVE_WARN("bootstrap root %s: %s", where_.c_str(), st.message().c_str());
      accept_warned_ = true;
      return;
    }
    if (!sock.valid()) return;
    size_t pending = std::count_if(conns_.begin(), conns_.end(),
                                   [](const auto& c) { return !c->dead && c->Pending(); });
    if (pending >= kMaxPendingHandshakes) {
      auto oldest = std::find_if(conns_.begin(), conns_.end(),
                                 [](const auto& c) { return !c->dead && c->Pending(); });
      Drop(oldest->get(), "too many unfinished handshakes; closing the oldest");
    }
    auto c = std::make_unique<Conn>();
    c->sock = std::move(sock);
    c->peer = AddrToString(peer);
    c->hello_deadline = DeadlineIn(std::min(timeouts_.handshake_s, timeouts_.job_s));
    if (!RandomBytes(c->challenge.nonce, kNonceBytes).ok()) {
      SIEVE_WARN("bootstrap root %s: no random nonce for %s", where_.c_str(), c->peer.c_str());
      continue;
    }
    c->out = EncodeChallenge(c->challenge);
    SIEVE_TRACE(kLogBootstrap, "bootstrap root %s: connection from %s", where_.c_str(),
                c->peer.c_str());
    Conn* raw = c.get();
    conns_.push_back(std::move(c));
    Flush(raw);  // the challenge fits an empty socket buffer: usually sent right here
  }
}

void RootServer::ReadFrom(Conn* c) {
  if (c->rank < 0) return ReadHello(c);
  // A joined rank has nothing more to say: any event is a close or a protocol violation.
  char byte;
  size_t got = 0;
  Status st = RecvSome(c->sock, &byte, 1, &got);
  if (!st.ok())
    return Drop(c, StrFormat("rank %d left before the table was sent (%s)", c->rank,
                             st.message().c_str()));
  if (got > 0) Drop(c, StrFormat("rank %d sent bytes after its hello", c->rank));
}

void RootServer::ReadHello(Conn* c) {
  for (;;) {
    if (c->in.size() == c->need) {
      if (!AdvanceHello(c)) return;
      continue;
    }
    size_t old = c->in.size(), got = 0;
    c->in.resize(c->need);
    Status st = RecvSome(c->sock, &c->in[old], c->need - old, &got);
    c->in.resize(old + got);
    if (!st.ok()) return Drop(c, "closed before finishing its hello (" + st.message() + ")");
    if (got == 0) return;  // would block; poll again
  }
}

// One stage of the hello is complete (prefix, header, body): check it. False when done with c.
bool RootServer::AdvanceHello(Conn* c) {
  const auto* p = reinterpret_cast<const uint8_t*>(c->in.data());
  if (c->need == kFramePrefixBytes) {
    Status st = CheckFramePrefix(p, c->in.size(), kHelloMagic, "peer " + c->peer);
    if (!st.ok()) {
      if (st.code() == Code::kInvalidUsage) version_note_ = st.message();
      Drop(c, st.message());
      return false;
    }
    c->need = kHelloHeaderBytes;
    return true;
  }
  if (!c->have_header) {
    Status st = ParseHelloHeader(p, c->in.size(), &c->header);
    if (!st.ok()) {
      Drop(c, st.message());
      return false;
    }
    if (!HelloMacValid(p, secret_, c->challenge.nonce)) {
      Drop(c, "failed authentication (wrong secret: another job's id, or not a Sieve rank)");
      return false;
    }
    c->have_header = true;
    c->need = kHelloHeaderBytes + c->header.body_len();
    return true;
  }
  Status st = ParseHelloBody(c->header, p + kHelloHeaderBytes, c->in.size() - kHelloHeaderBytes,
                             &c->info);
  c->in = std::string();
  if (!st.ok()) {
    Drop(c, st.message());
    return false;
  }
  Admit(c);
  return false;
}

// Why an authenticated hello cannot join this job ("" when it can).
std::string RootServer::Conflict(const HelloHeader& h, const std::string& peer) const {
  const char* from = peer.c_str();
  if (h.nranks < 1 || h.nranks > kMaxBootstrapRanks) {
    return StrFormat("rank %d at %s claims nranks %d (valid: 1 to %d)", h.rank, from, h.nranks,
                     kMaxBootstrapRanks);
  }
  if (h.rank < 0 || h.rank >= h.nranks)
    return StrFormat("rank %d at %s is out of range for nranks %d", h.rank, from, h.nranks);
  if (nranks_ > 0 && h.nranks != nranks_) {
    return StrFormat("rank %d at %s says nranks %d but rank %d said %d", h.rank, from, h.nranks,
                     first_rank_, nranks_);
  }
  if (nranks_ > 0 && by_rank_[h.rank] != nullptr) {
    return StrFormat("two processes claim rank %d (%s and %s)", h.rank,
                     by_rank_[h.rank]->peer.c_str(), from);
  }
  return "";
}

// Registers an authenticated hello, or fails the job on a conflict.
void RootServer::Admit(Conn* c) {
  const HelloHeader& h = c->header;
  if (h.nranks >= 1 && h.nranks <= kMaxBootstrapRanks) expected_ = std::max(expected_, h.nranks);
  if (phase_ == Phase::kFailed)
    return Answer(c, ReplyKind::kError, std::make_shared<const std::string>(failure_));
  std::string conflict = Conflict(h, c->peer);
  if (!conflict.empty()) return Fail(conflict, c);
  if (nranks_ < 0) {
    nranks_ = h.nranks;
    first_rank_ = h.rank;
    by_rank_.assign(nranks_, nullptr);
  }
  c->rank = h.rank;
  by_rank_[h.rank] = c;
  ++joined_;
  SIEVE_INFO(kLogBootstrap, "bootstrap root %s: rank %d of %d joined from %s", where_.c_str(),
             h.rank, h.nranks, c->peer.c_str());
}

// Fails the job: every joined rank, c, and every rank that authenticates later gets the error.
void RootServer::Fail(const std::string& why, Conn* c) {
  failure_ = "bootstrap failed: " + why;
  SIEVE_WARN("bootstrap root %s: %s", where_.c_str(), failure_.c_str());
  phase_ = Phase::kFailed;
  AnswerJoined(ReplyKind::kError, failure_);
  Answer(c, ReplyKind::kError, std::make_shared<const std::string>(failure_));
}

void RootServer::Answer(Conn* c, ReplyKind kind, std::shared_ptr<const std::string> body) {
  Digest digest = Sha256Of(body->data(), body->size());
  c->out += EncodeReplyHeader(secret_, c->header.nonce, kind, body->size(), digest);
  c->out_body = std::move(body);
  c->answered = true;
  ++answered_;
  Flush(c);
}

void RootServer::AnswerJoined(ReplyKind kind, const std::string& text) {
  auto body = std::make_shared<const std::string>(text);
  for (const auto& c : conns_)
    if (!c->dead && c->rank >= 0 && !c->answered) Answer(c.get(), kind, body);
}

// No more hellos: close the listener (late ranks fail fast) and drop unfinished handshakes.
void RootServer::BeginClosing(double flush_s) {
  phase_ = Phase::kClosing;
  flush_deadline_ = DeadlineIn(flush_s);
  listener_.Close();
  for (const auto& c : conns_)
    if (!c->dead && !c->answered) Drop(c.get(), "the job ended before this connection joined");
  Reap();
}

// Sends what the socket takes now; an answered connection is closed once all is sent.
void RootServer::Flush(Conn* c) {
  while (c->sent < c->OutBytes()) {
    const bool in_head = c->sent < c->out.size();
    const char* p = in_head ? c->out.data() + c->sent : c->out_body->data() + (c->sent - c->out.size());
    size_t len = in_head ? c->out.size() - c->sent : c->OutBytes() - c->sent;
    size_t n = 0;
    Status st = SendSome(c->sock, p, len, &n);
    if (!st.ok()) {
      SIEVE_WARN("bootstrap root %s: could not send to %s: %s", where_.c_str(), c->peer.c_str(),
                 st.message().c_str());
      if (c->rank >= 0 && !c->answered) return Drop(c, "send failed");
      c->dead = true;
      return;
    }
    if (n == 0) return;  // socket full; poll for POLLOUT
    c->sent += n;
  }
  if (c->answered) c->dead = true;
}

void RootServer::Drop(Conn* c, const std::string& why) {
  SIEVE_WARN("bootstrap root %s: dropping connection from %s: %s", where_.c_str(), c->peer.c_str(),
             why.c_str());
  if (c->rank >= 0 && !c->answered) {
    by_rank_[c->rank] = nullptr;  // the rank may still join again on a new connection
    --joined_;
  }
  c->rank = -1;
  c->dead = true;
}

void RootServer::ExpireSilent(Deadline now) {
  for (const auto& c : conns_) {
    if (!c->dead && c->Pending() && now >= c->hello_deadline) {
      Drop(c.get(), StrFormat("no complete hello within %.1f s (%zu bytes received)",
                              std::min(timeouts_.handshake_s, timeouts_.job_s), c->in.size()));
    }
  }
}

void RootServer::Reap() {
  conns_.erase(std::remove_if(conns_.begin(), conns_.end(), [](const auto& c) { return c->dead; }),
               conns_.end());
}

std::string RootServer::TimeoutMessage() const {
  std::string msg;
  if (nranks_ < 0) {
    msg = StrFormat("no rank joined within %.1f s", timeouts_.job_s);
  } else {
    std::vector<int> missing;
    for (int r = 0; r < nranks_; ++r)
      if (by_rank_[r] == nullptr) missing.push_back(r);
    msg = MissingRanksText(missing, nranks_) +
          StrFormat(" never joined within %.1f s", timeouts_.job_s);
  }
  if (!version_note_.empty()) msg += " (meanwhile " + version_note_ + ")";
  return msg;
}

}  // namespace

Status LaunchRootServer(Socket listener, const UniqueId& id, const BootstrapTimeouts& timeouts) {
  char key[kUniqueIdBytes];
  EncodeUniqueId(id, key);
  auto life = std::make_shared<RootLife>();
  std::string key_text(key, kUniqueIdBytes);
  {
    std::lock_guard<std::mutex> lock(Roots().mu);
    Roots().roots[key_text] = life;
  }
  auto server =
      std::make_unique<RootServer>(std::move(listener), id, timeouts, AddrToString(id.root), life);
  try {
    std::thread([server = std::move(server), key_text] {
      server->Run();
      std::lock_guard<std::mutex> lock(Roots().mu);
      Roots().roots.erase(key_text);
    }).detach();
  } catch (const std::system_error& e) {
    std::lock_guard<std::mutex> lock(Roots().mu);
    Roots().roots.erase(key_text);
    return Status::SystemError(StrFormat("cannot start the bootstrap root thread: %s", e.what()));
  }
  return Status::OK();
}

void WaitForLocalRoot(const char id[kUniqueIdBytes], Deadline deadline) {
  std::shared_ptr<RootLife> life;
  {
    std::lock_guard<std::mutex> lock(Roots().mu);
    auto it = Roots().roots.find(std::string(id, kUniqueIdBytes));
    if (it == Roots().roots.end()) return;
    life = it->second;
  }
  life->WaitDone(deadline);
}

}  // namespace sieve::transport
