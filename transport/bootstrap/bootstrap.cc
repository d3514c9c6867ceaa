// Bootstrap entry points: starting a job's root (listener + root thread) and the rank side of
// the exchange (challenge, authenticated hello, authenticated reply).
#include "transport/bootstrap/bootstrap.h"

#include <algorithm>
#include <cstring>

#include "core/log.h"
#include "transport/bootstrap/root_server.h"
#include "transport/bootstrap/socket.h"
#include "transport/bootstrap/unique_id.h"

namespace sieve::transport {

namespace {

// Ranks wait this much past their timeout so the root's (more precise) error frame wins.
constexpr double kReplyGraceS = 1.0;

Status CheckTimeouts(const BootstrapTimeouts& t) {
  if (!(t.job_s > 0) || t.job_s > 1e9)
    return Status::InvalidArgument(StrFormat("bootstrap timeout %g s is not positive", t.job_s));
  if (!(t.handshake_s > 0) || t.handshake_s > 1e9) {
    return Status::InvalidArgument(
        StrFormat("bootstrap handshake timeout %g s is not positive", t.handshake_s));
  }
  return Status::OK();
}

Status Launch(Socket listener, const UniqueId& id, const BootstrapTimeouts& t, char id_out[128]) {
  SIEVE_RETURN_IF_ERROR(LaunchRootServer(std::move(listener), id, t));
  SIEVE_INFO(kLogBootstrap, "bootstrap root listening on %s (timeout %.1f s, handshake %.1f s)",
             AddrToString(id.root).c_str(), t.job_s, t.handshake_s);
  EncodeUniqueId(id, id_out);
  return Status::OK();
}

// Turns socket failures while waiting for the root into messages that say what was awaited.
Status Explain(const Status& st, const std::string& root, const char* awaited, double waited_s) {
  if (st.ok() || st.code() != Code::kRemoteError) return st;
  if (st.message().rfind("timed out", 0) == 0) {
    return Status::RemoteError(
        StrFormat("no %s from bootstrap root %s within %.1f s", awaited, root.c_str(), waited_s));
  }
  if (st.message().rfind("peer closed", 0) == 0) {
    return Status::RemoteError(StrFormat(
        "bootstrap root %s closed the connection while this rank waited for its %s: it rejected "
        "this rank's hello (wrong id or secret, another protocol version; see the root's log) or "
        "it exited",
        root.c_str(), awaited));
  }
  return st;
}

// Reads a frame header of n bytes: the version prefix first, so another version is named even
// when its frames are laid out differently.
Status ReadFrame(const Socket& sock, uint8_t* buf, size_t n, const char magic[4],
                 const std::string& root, const char* awaited, Deadline deadline, double wait_s) {
  SIEVE_RETURN_IF_ERROR(
      Explain(RecvAll(sock, buf, kFramePrefixBytes, deadline), root, awaited, wait_s));
  Status st = CheckFramePrefix(buf, kFramePrefixBytes, magic, "bootstrap root " + root);
  if (!st.ok()) return st.code() == Code::kInvalidUsage ? st : Status::RemoteError(st.message());
  return Explain(RecvAll(sock, buf + kFramePrefixBytes, n - kFramePrefixBytes, deadline), root,
                 awaited, wait_s);
}

// The root's reply: verified MAC and body digest, then the table or the root's error.
Status ReadReply(const Socket& sock, const UniqueId& uid, const uint8_t* nonce, int nranks,
                 Deadline deadline, double wait_s, const std::string& root,
                 std::vector<PeerInfo>* table) {
  uint8_t h[kReplyHeaderBytes];
  SIEVE_RETURN_IF_ERROR(ReadFrame(sock, h, sizeof(h), kReplyMagic, root, "reply", deadline, wait_s));
  if (!ReplyMacValid(h, uid.secret, nonce)) {
    return Status::RemoteError(StrFormat(
        "bootstrap root %s failed to prove the job secret (another job's root on that address?)",
        root.c_str()));
  }
  ReplyHeader rh;
  Status st = ParseReplyHeader(h, sizeof(h), nranks, &rh);
  if (!st.ok()) return Status::RemoteError("bootstrap root " + root + ": " + st.message());
  std::string body(rh.body_len, '\0');
  SIEVE_RETURN_IF_ERROR(Explain(RecvAll(sock, &body[0], body.size(), deadline), root, "reply",
                                wait_s));
  Digest d = Sha256Of(body.data(), body.size());
  if (!ConstantTimeEqual(d.data(), rh.body_digest.data(), kSha256Bytes))
    return Status::RemoteError("bootstrap root " + root + " sent a reply that fails its digest");
  if (rh.kind == ReplyKind::kError)
    return Status::RemoteError(StrFormat("bootstrap root %s: %s", root.c_str(), body.c_str()));
  st = ParseTable(reinterpret_cast<const uint8_t*>(body.data()), body.size(), nranks, table);
  if (!st.ok()) return Status::RemoteError("bootstrap root " + root + ": " + st.message());
  return Status::OK();
}

// The rank side over one connection.
Status Exchange(const UniqueId& uid, int rank, int nranks, const PeerInfo& mine,
                const BootstrapTimeouts& t, std::vector<PeerInfo>* table) {
  const std::string root = AddrToString(uid.root);
  Deadline deadline = DeadlineIn(t.job_s);
  Socket sock;
  Status st = Connect(uid.root, deadline, &sock);
  if (!st.ok()) return st.WithContext("bootstrap");
  // The root challenges every connection at once; a silent listener is not a Sieve root.
  double challenge_s = std::min(t.handshake_s, t.job_s);
  uint8_t ch_bytes[kChallengeBytes];
  SIEVE_RETURN_IF_ERROR(ReadFrame(sock, ch_bytes, sizeof(ch_bytes), kChallengeMagic, root,
                                  "challenge", DeadlineIn(challenge_s), challenge_s));
  Challenge ch;
  st = ParseChallenge(ch_bytes, sizeof(ch_bytes), &ch);
  if (!st.ok()) return Status::RemoteError("bootstrap root " + root + ": " + st.message());
  uint8_t nonce[kNonceBytes];
  SIEVE_RETURN_IF_ERROR(RandomBytes(nonce, sizeof(nonce)));
  std::string hello = EncodeHello(uid.secret, ch.nonce, rank, nranks, nonce, mine);
  st = SendAll(sock, hello.data(), hello.size(), deadline);
  if (!st.ok()) return Explain(st, root, "reply", t.job_s);
  return ReadReply(sock, uid, nonce, nranks, DeadlineIn(t.job_s + kReplyGraceS), t.job_s, root,
                   table);
}

}  // namespace

Status StartBootstrapRoot(const std::string& ifname_spec, const BootstrapTimeouts& timeouts,
                          char id_out[128]) {
  SIEVE_RETURN_IF_ERROR(CheckTimeouts(timeouts));
  UniqueId id;
  std::string ifname;
  SIEVE_RETURN_IF_ERROR(FindInterfaceAddress(ifname_spec, &id.root, &ifname));
  SIEVE_RETURN_IF_ERROR(RandomSecret(id.secret));
  Socket listener;
  int port = 0;
  SIEVE_RETURN_IF_ERROR(Listen(id.root, 0, &listener, &port));
  SetAddrPort(port, &id.root);
  SIEVE_INFO(kLogBootstrap, "bootstrap root uses interface %s", ifname.c_str());
  return Launch(std::move(listener), id, timeouts, id_out);
}

Status StartBootstrapRootAt(const std::string& addr, int port, const uint8_t secret[32],
                            const std::string& ifname_spec, const BootstrapTimeouts& timeouts,
                            char id_out[128]) {
  SIEVE_RETURN_IF_ERROR(CheckTimeouts(timeouts));
  if (port < 0 || port > 65535)
    return Status::InvalidArgument(StrFormat("bootstrap port %d is out of range", port));
  UniqueId id;
  SIEVE_RETURN_IF_ERROR(ResolveAddress(addr, port, &id.root));
  std::memcpy(id.secret, secret, kSecretBytes);
  Socket listener;
  int bound = 0;
  Status st = Listen(id.root, port, &listener, &bound);
  if (!st.ok()) {
    // addr may name this host without being bound to it (NAT, /etc/hosts aliases): listen on
    // the chosen interface if one is named, else on every address.
    sockaddr_storage fallback{};
    fallback.ss_family = id.root.ss_family;
    std::string ifname = "all addresses";
    if (!ifname_spec.empty())
      SIEVE_RETURN_IF_ERROR(FindInterfaceAddress(ifname_spec, &fallback, &ifname));
    if (!Listen(fallback, port, &listener, &bound).ok()) return st;
    SIEVE_INFO(kLogBootstrap, "bootstrap root: %s; listening on %s instead", st.message().c_str(),
               ifname.c_str());
  }
  SetAddrPort(bound, &id.root);
  return Launch(std::move(listener), id, timeouts, id_out);
}

Status MakeUniqueId(const std::string& addr, int port, const uint8_t secret[32], char id_out[128]) {
  if (port < 1 || port > 65535)
    return Status::InvalidArgument(StrFormat("bootstrap port %d is out of range", port));
  UniqueId id;
  SIEVE_RETURN_IF_ERROR(ResolveAddress(addr, port, &id.root));
  std::memcpy(id.secret, secret, kSecretBytes);
  EncodeUniqueId(id, id_out);
  return Status::OK();
}

Status BootstrapExchange(const char id[128], int rank, int nranks, const PeerInfo& mine,
                         const BootstrapTimeouts& timeouts, std::vector<PeerInfo>* all) {
  SIEVE_RETURN_IF_ERROR(CheckTimeouts(timeouts));
  if (mine.worker_address.size() + mine.host_id.size() > kMaxPeerInfoBytes) {
    return Status::InvalidArgument(StrFormat("peer info of %zu bytes exceeds the %zu-byte cap",
                                             mine.worker_address.size() + mine.host_id.size(),
                                             kMaxPeerInfoBytes));
  }
  UniqueId uid;
  SIEVE_RETURN_IF_ERROR(DecodeUniqueId(id, &uid));
  const Deadline end = DeadlineIn(timeouts.job_s + kReplyGraceS);
  std::vector<PeerInfo> table;
  Status st = Exchange(uid, rank, nranks, mine, timeouts, &table);
  if (st.ok() && (rank < 0 || static_cast<size_t>(rank) >= table.size() || table[rank] != mine)) {
    st = Status::RemoteError(StrFormat("bootstrap root %s returned another process's info for "
                                       "rank %d", AddrToString(uid.root).c_str(), rank));
  }
  if (!st.ok()) {
    // A failed job's root may live in this process: let it answer the others before we return
    // (and perhaps exit), so they learn why instead of finding no root. They get a handshake
    // deadline's worth of time to come (the root finishes sooner once all nranks have heard).
    WaitForLocalRoot(id, std::min(end, DeadlineIn(timeouts.handshake_s)));
    return st;
  }
  SIEVE_TRACE(kLogBootstrap, "bootstrap: rank %d of %d received the table from %s", rank, nranks,
              AddrToString(uid.root).c_str());
  *all = std::move(table);
  return Status::OK();
}

}  // namespace sieve::transport
