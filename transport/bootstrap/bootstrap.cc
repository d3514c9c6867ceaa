// Bootstrap rendezvous over TCP: the root thread's poll() loop that collects one hello per
// rank and answers with the PeerInfo table (or an error), and the rank side of the exchange.
#include "transport/bootstrap/bootstrap.h"

#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <system_error>
#include <thread>

#include "core/log.h"
#include "transport/bootstrap/socket.h"
#include "transport/bootstrap/unique_id.h"

namespace sieve::transport {

namespace {

// Wire format. Every integer is little-endian and fixed width.
//
// Hello (rank -> root): a 40-byte header, then worker_address bytes, then host_id bytes.
//   [0,4)   magic "SVBH"           [4,6)   protocol version (kWireVersion)
//   [6,8)   reserved, zero         [8,24)  secret from the unique id
//   [24,28) rank (int32)           [28,32) nranks (int32)
//   [32,36) worker_address length  [36,40) host_id length (uint32; sum <= kMaxPeerInfoBytes)
//
// Reply (root -> rank): a 16-byte header, then a body of the given length.
//   [0,4)   magic "SVBR"           [4,6)   protocol version
//   [6,8)   kind: kReplyTable or kReplyError
//   [8,16)  body length (uint64)
//   table body: for each rank in order, uint32 worker_address length, uint32 host_id length,
//               then the two byte strings;  error body: the root's message text.
constexpr char kHelloMagic[4] = {'S', 'V', 'B', 'H'};
constexpr char kReplyMagic[4] = {'S', 'V', 'B', 'R'};
constexpr uint16_t kWireVersion = 1;
constexpr size_t kHelloHeaderBytes = 40;
constexpr size_t kReplyHeaderBytes = 16;
constexpr uint16_t kReplyTable = 0;
constexpr uint16_t kReplyError = 1;
constexpr size_t kMaxErrorBytes = 64 * 1024;
// A connection must finish its hello within this long (or the job timeout if shorter).
constexpr double kHelloTimeoutS = 5.0;
// Ranks wait this much past their timeout so the root's (more precise) error frame wins.
constexpr double kReplyGraceS = 1.0;

void PutLE(uint64_t v, int bytes, std::string* out) {
  for (int i = 0; i < bytes; ++i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
uint64_t GetLE(const char* p, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v |= static_cast<uint64_t>(static_cast<uint8_t>(p[i])) << (8 * i);
  return v;
}

// Constant-time so a remote peer learns nothing from how fast a wrong secret is rejected.
bool SecretsEqual(const uint8_t* a, const uint8_t* b) {
  volatile uint8_t diff = 0;
  for (size_t i = 0; i < kSecretBytes; ++i) diff = diff | (a[i] ^ b[i]);
  return diff == 0;
}

std::string EncodeHello(const uint8_t* secret, int rank, int nranks, const PeerInfo& info) {
  std::string out(kHelloMagic, sizeof(kHelloMagic));
  PutLE(kWireVersion, 2, &out);
  PutLE(0, 2, &out);
  out.append(reinterpret_cast<const char*>(secret), kSecretBytes);
  PutLE(static_cast<uint32_t>(rank), 4, &out);
  PutLE(static_cast<uint32_t>(nranks), 4, &out);
  PutLE(info.worker_address.size(), 4, &out);
  PutLE(info.host_id.size(), 4, &out);
  return out + info.worker_address + info.host_id;
}

std::string EncodeReply(uint16_t kind, const std::string& body) {
  std::string out(kReplyMagic, sizeof(kReplyMagic));
  PutLE(kWireVersion, 2, &out);
  PutLE(kind, 2, &out);
  PutLE(body.size(), 8, &out);
  return out + body;
}

// "rank 3 of 8" / "ranks 3, 5 of 8" (at most 16 listed).
std::string MissingRanksText(const std::vector<int>& missing, int nranks) {
  std::string text = missing.size() == 1 ? "rank " : "ranks ";
  for (size_t i = 0; i < missing.size() && i < 16; ++i)
    text += (i ? ", " : "") + std::to_string(missing[i]);
  if (missing.size() > 16) text += StrFormat(" and %zu more", missing.size() - 16);
  return text + StrFormat(" of %d", nranks);
}

// One accepted connection on the root.
struct Conn {
  Socket sock;
  std::string peer;  // "ip:port", for log lines
  Deadline hello_deadline;
  std::string in;  // hello bytes received so far
  size_t need = kHelloHeaderBytes;
  int rank = -1;  // >= 0 once the hello is accepted
  PeerInfo info;
  size_t sent = 0;  // reply bytes sent
  bool dead = false;
};

// Serves one job; owns everything it touches (runs on a detached thread).
class RootServer {
 public:
  RootServer(Socket listener, const uint8_t* secret, double timeout_s, std::string where)
      : listener_(std::move(listener)), timeout_s_(timeout_s), where_(std::move(where)) {
    std::memcpy(secret_, secret, kSecretBytes);
  }
  void Run();

 private:
  void AcceptPending();
  void ReadFrom(Conn* c);
  std::string CheckHeader(const Conn& c) const;
  std::string Admit(Conn* c);
  void Drop(Conn* c, const std::string& why);
  void ExpireSilent();
  void Reap();
  void Reply(uint16_t kind, const std::string& body);
  std::string TimeoutMessage() const;

  Socket listener_;
  uint8_t secret_[kSecretBytes];
  double timeout_s_;
  std::string where_;  // listening address, for log lines
  std::vector<std::unique_ptr<Conn>> conns_;
  int nranks_ = -1;  // from the first accepted hello
  std::vector<Conn*> by_rank_;
  int joined_ = 0;
  bool accept_warned_ = false;
};

void RootServer::Run() {
  Deadline job_deadline = DeadlineIn(timeout_s_);
  for (;;) {
    if (nranks_ > 0 && joined_ == nranks_) {
      SIEVE_INFO(kLogBootstrap, "bootstrap root %s: all %d ranks joined", where_.c_str(), nranks_);
      std::string body;
      for (const Conn* c : by_rank_) {
        PutLE(c->info.worker_address.size(), 4, &body);
        PutLE(c->info.host_id.size(), 4, &body);
        body += c->info.worker_address + c->info.host_id;
      }
      return Reply(kReplyTable, body);
    }
    if (std::chrono::steady_clock::now() >= job_deadline) {
      std::string msg = TimeoutMessage();
      SIEVE_WARN("bootstrap root %s: %s", where_.c_str(), msg.c_str());
      return Reply(kReplyError, msg);
    }
    // Sleep until a socket is readable, the job deadline, or the next silent-peer deadline.
    Deadline wake = job_deadline;
    std::vector<pollfd> fds{{listener_.fd(), POLLIN, 0}};
    for (const auto& c : conns_) {
      fds.push_back({c->sock.fd(), POLLIN, 0});
      if (c->rank < 0) wake = std::min(wake, c->hello_deadline);
    }
    int rc = poll(fds.data(), fds.size(), PollTimeoutMs(wake));
    if (rc < 0 && errno != EINTR) {
      SIEVE_WARN("bootstrap root %s: poll failed: %s", where_.c_str(), std::strerror(errno));
      return Reply(kReplyError, "bootstrap root failed: poll error");
    }
    size_t n = conns_.size();  // AcceptPending appends; only poll the ones in fds
    for (size_t i = 0; rc > 0 && i < n; ++i)
      if (fds[i + 1].revents != 0) ReadFrom(conns_[i].get());
    if (rc > 0 && fds[0].revents != 0) AcceptPending();
    ExpireSilent();
    Reap();
  }
}

void RootServer::AcceptPending() {
  for (;;) {
    Socket sock;
    sockaddr_storage peer{};
    Status st = Accept(listener_, &sock, &peer);
    if (!st.ok()) {
      // Typically fd exhaustion: keep serving the connections already open.
      if (!accept_warned_)
        SIEVE_WARN("bootstrap root %s: %s", where_.c_str(), st.message().c_str());
      accept_warned_ = true;
      return;
    }
    if (!sock.valid()) return;
    auto c = std::make_unique<Conn>();
    c->sock = std::move(sock);
    c->peer = AddrToString(peer);
    c->hello_deadline = DeadlineIn(std::min(kHelloTimeoutS, timeout_s_));
    SIEVE_TRACE(kLogBootstrap, "bootstrap root %s: connection from %s", where_.c_str(),
                c->peer.c_str());
    conns_.push_back(std::move(c));
  }
}

void RootServer::ReadFrom(Conn* c) {
  if (c->rank >= 0) {
    // A joined rank has nothing more to say: any event is a close or a protocol violation.
    char byte;
    size_t got = 0;
    Status st = RecvSome(c->sock, &byte, 1, &got);
    if (!st.ok())
      return Drop(c, StrFormat("rank %d left before the table was sent (%s)", c->rank,
                               st.message().c_str()));
    if (got > 0) Drop(c, StrFormat("rank %d sent bytes after its hello", c->rank));
    return;
  }
  while (c->in.size() < c->need) {
    size_t old = c->in.size(), got = 0;
    c->in.resize(c->need);
    Status st = RecvSome(c->sock, &c->in[old], c->need - old, &got);
    c->in.resize(old + got);
    if (!st.ok()) return Drop(c, "closed before finishing its hello (" + st.message() + ")");
    if (got == 0) return;  // would block; poll again
    if (c->in.size() == kHelloHeaderBytes && c->need == kHelloHeaderBytes) {
      std::string why = CheckHeader(*c);
      if (!why.empty()) return Drop(c, why);
      c->need = kHelloHeaderBytes + GetLE(&c->in[32], 4) + GetLE(&c->in[36], 4);
    }
  }
  std::string why = Admit(c);
  if (!why.empty()) Drop(c, why);
}

// Validates a complete hello header; returns the reason to drop it, or "".
std::string RootServer::CheckHeader(const Conn& c) const {
  const char* h = c.in.data();
  if (std::memcmp(h, kHelloMagic, sizeof(kHelloMagic)) != 0) return "bad magic (not a Sieve hello)";
  if (GetLE(h + 4, 2) != kWireVersion)
    return StrFormat("protocol version %u, expected %u", unsigned(GetLE(h + 4, 2)), kWireVersion);
  if (GetLE(h + 6, 2) != 0) return "malformed hello (reserved bytes set)";
  if (!SecretsEqual(reinterpret_cast<const uint8_t*>(h + 8), secret_))
    return "wrong secret (a different job's id?)";
  int rank = static_cast<int32_t>(GetLE(h + 24, 4));
  int nranks = static_cast<int32_t>(GetLE(h + 28, 4));
  if (nranks < 1 || nranks > kMaxBootstrapRanks) return StrFormat("invalid nranks %d", nranks);
  if (rank < 0 || rank >= nranks)
    return StrFormat("rank %d out of range for nranks %d", rank, nranks);
  uint64_t len = GetLE(h + 32, 4) + GetLE(h + 36, 4);
  if (len > kMaxPeerInfoBytes)
    return StrFormat("peer info of %llu bytes exceeds the %zu-byte cap",
                     static_cast<unsigned long long>(len), kMaxPeerInfoBytes);
  return "";
}

// Registers a complete hello; returns the reason to drop it, or "".
std::string RootServer::Admit(Conn* c) {
  const char* h = c->in.data();
  int rank = static_cast<int32_t>(GetLE(h + 24, 4));
  int nranks = static_cast<int32_t>(GetLE(h + 28, 4));
  if (nranks_ < 0) {
    nranks_ = nranks;
    by_rank_.assign(nranks, nullptr);
  }
  if (nranks != nranks_)
    return StrFormat("rank %d says nranks %d but the first hello said %d", rank, nranks, nranks_);
  if (by_rank_[rank] != nullptr)
    return StrFormat("duplicate rank %d (already joined from %s)", rank,
                     by_rank_[rank]->peer.c_str());
  size_t wlen = GetLE(h + 32, 4);
  c->info.worker_address = c->in.substr(kHelloHeaderBytes, wlen);
  c->info.host_id = c->in.substr(kHelloHeaderBytes + wlen);
  c->in = std::string();
  c->rank = rank;
  by_rank_[rank] = c;
  ++joined_;
  SIEVE_INFO(kLogBootstrap, "bootstrap root %s: rank %d of %d joined from %s", where_.c_str(), rank,
             nranks, c->peer.c_str());
  return "";
}

void RootServer::Drop(Conn* c, const std::string& why) {
  SIEVE_WARN("bootstrap root %s: dropping connection from %s: %s", where_.c_str(), c->peer.c_str(),
             why.c_str());
  if (c->rank >= 0) {
    by_rank_[c->rank] = nullptr;  // the rank may still join again on a new connection
    --joined_;
    c->rank = -1;
  }
  c->dead = true;
}

void RootServer::ExpireSilent() {
  auto now = std::chrono::steady_clock::now();
  for (const auto& c : conns_) {
    if (!c->dead && c->rank < 0 && now >= c->hello_deadline) {
      Drop(c.get(), StrFormat("no complete hello within %.1f s (%zu bytes received)",
                              std::min(kHelloTimeoutS, timeout_s_), c->in.size()));
    }
  }
}

void RootServer::Reap() {
  conns_.erase(std::remove_if(conns_.begin(), conns_.end(), [](const auto& c) { return c->dead; }),
               conns_.end());
}

std::string RootServer::TimeoutMessage() const {
  if (nranks_ < 0) return StrFormat("no rank joined within %.1f s", timeout_s_);
  std::vector<int> missing;
  for (int r = 0; r < nranks_; ++r)
    if (by_rank_[r] == nullptr) missing.push_back(r);
  return MissingRanksText(missing, nranks_) + StrFormat(" never joined within %.1f s", timeout_s_);
}

// Sends the same reply to every joined rank concurrently, then closes everything.
void RootServer::Reply(uint16_t kind, const std::string& body) {
  listener_.Close();  // late ranks now fail fast with "connection refused"
  const std::string frame = EncodeReply(kind, body);
  Deadline deadline = DeadlineIn(kind == kReplyTable ? timeout_s_ : std::min(timeout_s_, 5.0));
  for (const auto& c : conns_) {
    if (c->rank < 0) Drop(c.get(), "the job ended before this connection sent its hello");
  }
  Reap();
  while (!conns_.empty()) {
    std::vector<pollfd> fds;
    for (const auto& c : conns_) fds.push_back({c->sock.fd(), POLLOUT, 0});
    int rc = poll(fds.data(), fds.size(), PollTimeoutMs(deadline));
    if (rc == 0 || (rc < 0 && errno != EINTR)) break;
    for (size_t i = 0; rc > 0 && i < conns_.size(); ++i) {
      Conn* c = conns_[i].get();
      if (fds[i].revents == 0) continue;
      size_t n = 0;
      Status st = SendSome(c->sock, frame.data() + c->sent, frame.size() - c->sent, &n);
      c->sent += n;
      if (!st.ok()) {
        SIEVE_WARN("bootstrap root %s: could not answer rank %d at %s: %s", where_.c_str(), c->rank,
                   c->peer.c_str(), st.message().c_str());
      }
      c->dead = !st.ok() || c->sent == frame.size();
    }
    Reap();
  }
  for (const auto& c : conns_) {
    SIEVE_WARN("bootstrap root %s: rank %d at %s did not take its reply in time", where_.c_str(),
               c->rank, c->peer.c_str());
  }
}

Status CheckTimeout(double timeout_s) {
  if (!(timeout_s > 0) || timeout_s > 1e9)
    return Status::InvalidArgument(StrFormat("bootstrap timeout %g s is not positive", timeout_s));
  return Status::OK();
}

// Encodes the id and starts the job's thread; the thread owns copies of all it uses.
Status LaunchRoot(Socket listener, const UniqueId& id, double timeout_s, char id_out[128]) {
  std::string where = AddrToString(id.root);
  auto server = std::make_unique<RootServer>(std::move(listener), id.secret, timeout_s, where);
  try {
    std::thread([server = std::move(server)] { server->Run(); }).detach();
  } catch (const std::system_error& e) {
    return Status::SystemError(StrFormat("cannot start the bootstrap root thread: %s", e.what()));
  }
  SIEVE_INFO(kLogBootstrap, "bootstrap root listening on %s (timeout %.1f s)", where.c_str(),
             timeout_s);
  EncodeUniqueId(id, id_out);
  return Status::OK();
}

// Reads the table body: nranks entries, each bounded, consuming exactly body_len bytes.
Status ReadTable(const Socket& sock, uint64_t body_len, int nranks, Deadline deadline,
                 const std::string& root, std::vector<PeerInfo>* table) {
  std::vector<PeerInfo> out(nranks);
  uint64_t consumed = 0;
  for (PeerInfo& info : out) {
    char lens[8];
    SIEVE_RETURN_IF_ERROR(RecvAll(sock, lens, sizeof(lens), deadline));
    uint64_t wlen = GetLE(lens, 4), hlen = GetLE(lens + 4, 4);
    consumed += sizeof(lens) + wlen + hlen;
    if (wlen + hlen > kMaxPeerInfoBytes || consumed > body_len) {
      return Status::RemoteError(
          StrFormat("bootstrap root %s sent a malformed table", root.c_str()));
    }
    info.worker_address.resize(wlen);
    info.host_id.resize(hlen);
    SIEVE_RETURN_IF_ERROR(RecvAll(sock, &info.worker_address[0], wlen, deadline));
    SIEVE_RETURN_IF_ERROR(RecvAll(sock, &info.host_id[0], hlen, deadline));
  }
  if (consumed != body_len) {
    return Status::RemoteError(
        StrFormat("bootstrap root %s sent a table of the wrong size", root.c_str()));
  }
  *table = std::move(out);
  return Status::OK();
}

// Reads the root's reply frame: the table, or the root's error as a RemoteError.
Status ReadReply(const Socket& sock, int nranks, Deadline deadline, const std::string& root,
                 std::vector<PeerInfo>* table) {
  char h[kReplyHeaderBytes];
  SIEVE_RETURN_IF_ERROR(RecvAll(sock, h, sizeof(h), deadline));
  uint16_t kind = static_cast<uint16_t>(GetLE(h + 6, 2));
  uint64_t body_len = GetLE(h + 8, 8);
  if (std::memcmp(h, kReplyMagic, sizeof(kReplyMagic)) != 0 || GetLE(h + 4, 2) != kWireVersion ||
      (kind != kReplyTable && kind != kReplyError)) {
    return Status::RemoteError(
        StrFormat("bootstrap root %s answered with an unknown frame", root.c_str()));
  }
  if (kind == kReplyTable) return ReadTable(sock, body_len, nranks, deadline, root, table);
  std::string msg(std::min<uint64_t>(body_len, kMaxErrorBytes), '\0');
  SIEVE_RETURN_IF_ERROR(RecvAll(sock, &msg[0], msg.size(), deadline));
  return Status::RemoteError(StrFormat("bootstrap root %s: %s", root.c_str(), msg.c_str()));
}

// Turns transport failures into messages that say what the rank was waiting for.
Status ExplainReplyError(const Status& st, const std::string& root, double timeout_s) {
  if (st.ok() || st.code() != Code::kRemoteError) return st;
  if (st.message().rfind("timed out", 0) == 0) {
    return Status::RemoteError(
        StrFormat("no reply from bootstrap root %s within %.1f s", root.c_str(), timeout_s));
  }
  if (st.message().rfind("peer closed", 0) == 0) {
    return Status::RemoteError(StrFormat(
        "bootstrap root %s closed the connection: it rejected this rank's hello (wrong id or "
        "secret, duplicate rank, nranks mismatch; see the root's log) or it exited",
        root.c_str()));
  }
  return st;
}

Status CheckExchangeArgs(int rank, int nranks, const PeerInfo& mine, double timeout_s) {
  SIEVE_RETURN_IF_ERROR(CheckTimeout(timeout_s));
  if (nranks < 1 || nranks > kMaxBootstrapRanks || rank < 0 || rank >= nranks)
    return Status::InvalidArgument(StrFormat("rank %d of nranks %d is invalid", rank, nranks));
  if (mine.worker_address.size() + mine.host_id.size() > kMaxPeerInfoBytes) {
    return Status::InvalidArgument(StrFormat("peer info of %zu bytes exceeds the %zu-byte cap",
                                             mine.worker_address.size() + mine.host_id.size(),
                                             kMaxPeerInfoBytes));
  }
  return Status::OK();
}

}  // namespace

Status StartBootstrapRoot(const std::string& ifname_spec, double timeout_s, char id_out[128]) {
  SIEVE_RETURN_IF_ERROR(CheckTimeout(timeout_s));
  UniqueId id;
  std::string ifname;
  SIEVE_RETURN_IF_ERROR(FindInterfaceAddress(ifname_spec, &id.root, &ifname));
  SIEVE_RETURN_IF_ERROR(RandomSecret(id.secret));
  Socket listener;
  int port = 0;
  SIEVE_RETURN_IF_ERROR(Listen(id.root, 0, &listener, &port));
  SetAddrPort(port, &id.root);
  SIEVE_INFO(kLogBootstrap, "bootstrap root uses interface %s", ifname.c_str());
  return LaunchRoot(std::move(listener), id, timeout_s, id_out);
}

Status StartBootstrapRootAt(const std::string& addr, int port, const uint8_t secret[16],
                            double timeout_s, char id_out[128]) {
  SIEVE_RETURN_IF_ERROR(CheckTimeout(timeout_s));
  if (port < 0 || port > 65535)
    return Status::InvalidArgument(StrFormat("bootstrap port %d is out of range", port));
  UniqueId id;
  SIEVE_RETURN_IF_ERROR(ResolveAddress(addr, port, &id.root));
  std::memcpy(id.secret, secret, kSecretBytes);
  Socket listener;
  int bound = 0;
  Status st = Listen(id.root, port, &listener, &bound);
  if (!st.ok()) {
    // addr may name this host without being bound to it (NAT, /etc/hosts aliases).
    sockaddr_storage any{};
    any.ss_family = id.root.ss_family;
    if (!Listen(any, port, &listener, &bound).ok()) return st;
    SIEVE_INFO(kLogBootstrap, "bootstrap root: %s; listening on all addresses instead",
               st.message().c_str());
  }
  SetAddrPort(bound, &id.root);
  return LaunchRoot(std::move(listener), id, timeout_s, id_out);
}

Status MakeUniqueId(const std::string& addr, int port, const uint8_t secret[16], char id_out[128]) {
  if (port < 1 || port > 65535)
    return Status::InvalidArgument(StrFormat("bootstrap port %d is out of range", port));
  UniqueId id;
  SIEVE_RETURN_IF_ERROR(ResolveAddress(addr, port, &id.root));
  std::memcpy(id.secret, secret, kSecretBytes);
  EncodeUniqueId(id, id_out);
  return Status::OK();
}

Status BootstrapExchange(const char id[128], int rank, int nranks, const PeerInfo& mine,
                         double timeout_s, std::vector<PeerInfo>* all) {
  SIEVE_RETURN_IF_ERROR(CheckExchangeArgs(rank, nranks, mine, timeout_s));
  UniqueId uid;
  SIEVE_RETURN_IF_ERROR(DecodeUniqueId(id, &uid));
  std::string root = AddrToString(uid.root);
  Deadline deadline = DeadlineIn(timeout_s);
  Deadline reply_deadline = DeadlineIn(timeout_s + kReplyGraceS);
  Socket sock;
  Status st = Connect(uid.root, deadline, &sock);
  if (!st.ok()) return st.WithContext("bootstrap");
  std::string hello = EncodeHello(uid.secret, rank, nranks, mine);
  st = SendAll(sock, hello.data(), hello.size(), deadline);
  if (!st.ok()) return ExplainReplyError(st, root, timeout_s);
  std::vector<PeerInfo> table;
  st = ExplainReplyError(ReadReply(sock, nranks, reply_deadline, root, &table), root, timeout_s);
  if (!st.ok()) return st;
  if (table[rank] != mine) {
    return Status::RemoteError(StrFormat(
        "bootstrap root %s returned another process's info for rank %d", root.c_str(), rank));
  }
  SIEVE_TRACE(kLogBootstrap, "bootstrap: rank %d of %d received the table from %s", rank, nranks,
              root.c_str());
  *all = std::move(table);
  return Status::OK();
}

}  // namespace sieve::transport
