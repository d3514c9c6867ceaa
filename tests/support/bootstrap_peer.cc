// Raw bootstrap peers for tests (see bootstrap_peer.h).
#include "support/bootstrap_peer.h"

#include <netinet/in.h>
#include <poll.h>

#include <chrono>
#include <cstring>

#include "transport/bootstrap/sha256.h"
#include "transport/bootstrap/unique_id.h"

namespace sieve::transport {

std::string Hex(const uint8_t* p, size_t n) {
  static const char kDigits[] = "0123456789abcdef";
  std::string out;
  for (size_t i = 0; i < n; ++i) {
    out += kDigits[p[i] >> 4];
    out += kDigits[p[i] & 15];
  }
  return out;
}

std::string LE(uint64_t v, int bytes) {
  std::string out;
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>(v >> (8 * i)));
  return out;
}

std::vector<RankResult> RunClaims(const char* id, const std::vector<Claim>& claims,
                                  const std::vector<PeerInfo>& infos, BootstrapTimeouts t) {
  using Clock = std::chrono::steady_clock;
  std::vector<RankResult> results(claims.size());
  std::vector<std::thread> threads;
  for (size_t i = 0; i < claims.size(); ++i) {
    threads.emplace_back([&, i] {
      auto start = Clock::now();
      results[i].status =
          BootstrapExchange(id, claims[i].rank, claims[i].nranks, infos[i], t, &results[i].table);
      results[i].seconds = std::chrono::duration<double>(Clock::now() - start).count();
    });
  }
  for (auto& th : threads) th.join();
  return results;
}

int FreeLoopbackPort() {
  sockaddr_storage lo{};
  lo.ss_family = AF_INET;
  reinterpret_cast<sockaddr_in*>(&lo)->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  Socket probe;
  int port = 0;
  if (!Listen(lo, 0, &probe, &port).ok()) return 0;
  probe.Close();
  return port;
}

std::string Bytes(const uint8_t* p, size_t n) { return std::string(reinterpret_cast<const char*>(p), n); }

Socket ConnectRaw(const char* id) {
  UniqueId uid;
  Socket sock;
  if (!DecodeUniqueId(id, &uid).ok()) return sock;
  if (!Connect(uid.root, DeadlineIn(5), &sock).ok()) return Socket();
  return sock;
}

bool ClosedByPeer(const Socket& sock) {
  Deadline deadline = DeadlineIn(5);
  for (;;) {
    char buf[256];
    Status st = RecvAll(sock, buf, 1, deadline);
    if (!st.ok()) return st.message().find("peer closed") != std::string::npos;
    size_t got = 0;  // discard whatever else is already there
    while (RecvSome(sock, buf, sizeof(buf), &got).ok() && got > 0) {
    }
  }
}

std::string ReadChallengeNonce(const Socket& sock) {
  char c[40];
  if (!RecvAll(sock, c, sizeof(c), DeadlineIn(5)).ok()) return "";
  if (std::string(c, 8) != "SVBC" + LE(2, 2) + LE(0, 2)) return "";
  return std::string(c + 8, 32);
}

std::string GoldenHello(const uint8_t* secret, const std::string& root_nonce, int rank, int nranks,
                        const std::string& rank_nonce, const PeerInfo& info, int version) {
  std::string body = info.worker_address + info.host_id;
  Digest digest = Sha256Of(body.data(), body.size());
  std::string h = "SVBH" + LE(version, 2) + LE(0, 2) + LE(static_cast<uint32_t>(rank), 4) +
                  LE(static_cast<uint32_t>(nranks), 4) + LE(info.worker_address.size(), 4) +
                  LE(info.host_id.size(), 4) + rank_nonce + Bytes(digest.data(), 32);
  HmacSha256 mac(secret, 32);
  mac.Update(root_nonce.data(), root_nonce.size());
  mac.Update(h.data(), h.size());
  Digest m = mac.Final();
  return h + Bytes(m.data(), 32) + body;
}

std::string GoldenReply(const uint8_t* secret, const std::string& rank_nonce, int kind,
                        const std::string& body) {
  Digest digest = Sha256Of(body.data(), body.size());
  std::string h = "SVBR" + LE(2, 2) + LE(kind, 2) + LE(body.size(), 8) + Bytes(digest.data(), 32);
  HmacSha256 mac(secret, 32);
  mac.Update(rank_nonce.data(), rank_nonce.size());
  mac.Update(h.data(), h.size());
  Digest m = mac.Final();
  return h + Bytes(m.data(), 32) + body;
}

std::string GoldenTableBody(const std::vector<PeerInfo>& infos) {
  std::string body;
  for (const auto& i : infos)
    body += LE(i.worker_address.size(), 4) + LE(i.host_id.size(), 4) + i.worker_address + i.host_id;
  return body;
}

FakeRoot::FakeRoot(const uint8_t* secret, Serve serve) {
  UniqueId uid;
  uid.root.ss_family = AF_INET;
  reinterpret_cast<sockaddr_in*>(&uid.root)->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  int port = 0;
  Status st = Listen(uid.root, 0, &listener_, &port);
  SetAddrPort(port, &uid.root);
  std::memcpy(uid.secret, secret, kSecretBytes);
  EncodeUniqueId(uid, id_);
  if (!st.ok()) return;
  thread_ = std::thread([this, serve] {
    pollfd p{listener_.fd(), POLLIN, 0};
    if (poll(&p, 1, 10000) <= 0) return;
    Socket conn;
    sockaddr_storage peer{};
    if (Accept(listener_, &conn, &peer).ok() && conn.valid()) serve(conn);
  });
}

FakeRoot::~FakeRoot() {
  if (thread_.joinable()) thread_.join();
}

}  // namespace sieve::transport
