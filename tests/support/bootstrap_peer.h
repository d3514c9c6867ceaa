// Raw bootstrap peers for tests: the documented frame layouts written independently of
// transport/bootstrap/wire.cc (a golden format), and helpers that play misbehaving clients
// and fake roots over real sockets.
#ifndef SIEVE_TESTS_SUPPORT_BOOTSTRAP_PEER_H_
#define SIEVE_TESTS_SUPPORT_BOOTSTRAP_PEER_H_

#include <cstdint>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "transport/bootstrap/bootstrap.h"
#include "transport/bootstrap/socket.h"

namespace sieve::transport {

std::string Hex(const uint8_t* p, size_t n);
std::string LE(uint64_t v, int bytes);
std::string Bytes(const uint8_t* p, size_t n);

// Connects to the root named by id (within 5 s); invalid socket on failure.
Socket ConnectRaw(const char* id);
// True when the peer closes this connection within 5 s (bytes before the close are skipped).
bool ClosedByPeer(const Socket& sock);
// Reads the root's 40-byte challenge; returns its 32-byte nonce, or "" when it is not one.
std::string ReadChallengeNonce(const Socket& sock);

// Hello header and body as wire.h documents them, MAC'd with HMAC-SHA-256(secret, root nonce ||
// header[0,88)).
std::string GoldenHello(const uint8_t* secret, const std::string& root_nonce, int rank, int nranks,
                        const std::string& rank_nonce, const PeerInfo& info, int version = 2);
// Reply header + body as wire.h documents them.
std::string GoldenReply(const uint8_t* secret, const std::string& rank_nonce, int kind,
                        const std::string& body);
std::string GoldenTableBody(const std::vector<PeerInfo>& infos);

// Who a rank thread claims to be (honest, or a conflicting/forged claim).
struct Claim {
  int rank, nranks;
};

// What one rank thread's BootstrapExchange returned, and how long it took.
struct RankResult {
  Status status;
  std::vector<PeerInfo> table;
  double seconds = 0;
};

// One thread per claim, each running BootstrapExchange with infos[i]; all joined.
std::vector<RankResult> RunClaims(const char* id, const std::vector<Claim>& claims,
                                  const std::vector<PeerInfo>& infos, BootstrapTimeouts t);

// A loopback port that was free a moment ago and has no listener now; 0 on failure.
int FreeLoopbackPort();

// A listener on 127.0.0.1 that runs `serve` on its first connection (on a thread), with an id
// naming it and `secret`.
class FakeRoot {
 public:
  using Serve = std::function<void(const Socket& conn)>;
  FakeRoot(const uint8_t* secret, Serve serve);
  ~FakeRoot();
  const char* id() const { return id_; }

 private:
  Socket listener_;
  char id_[128];
  std::thread thread_;
};

}  // namespace sieve::transport

#endif  // SIEVE_TESTS_SUPPORT_BOOTSTRAP_PEER_H_
