// Bootstrap hardening: the golden frame layouts, the secret never on the wire, stray
// connections that cost the job nothing, version mismatches named on both sides, forged
// roots, conflicting ranks that fail every rank, and listeners bound to the chosen interface.
#include <gtest/gtest.h>
#include <netinet/in.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <mutex>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "core/log.h"
#include "support/bootstrap_peer.h"
#include "support/log_capture.h"
#include "transport/bootstrap/bootstrap.h"
#include "transport/bootstrap/unique_id.h"
#include "transport/bootstrap/wire.h"

namespace sieve::transport {
namespace {

using Clock = std::chrono::steady_clock;

double Since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

std::string RandomString(std::mt19937* rng, size_t n) {
  std::string s(n, '\0');
  for (char& c : s) c = static_cast<char>((*rng)());
  return s;
}

std::vector<PeerInfo> RandomInfos(int n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<PeerInfo> infos(n);
  for (int r = 0; r < n; ++r) {
    infos[r].worker_address = RandomString(&rng, 1 + rng() % 300);
    infos[r].host_id = "host#" + std::to_string(r);
  }
  return infos;
}

std::vector<Claim> Honest(int n) {
  std::vector<Claim> c;
  for (int r = 0; r < n; ++r) c.push_back({r, n});
  return c;
}

using sieve_test::LogCapture;

std::string Nonce(uint8_t fill) { return std::string(32, static_cast<char>(fill)); }

TEST(BootstrapWireTest, FramesMatchTheDocumentedLayout) {
  std::mt19937 rng(7);
  uint8_t secret[32];
  for (auto& b : secret) b = static_cast<uint8_t>(rng());
  PeerInfo info{RandomString(&rng, 77), std::string("h\0st", 4)};
  std::string root_nonce = RandomString(&rng, 32), rank_nonce = RandomString(&rng, 32);
  auto rn = reinterpret_cast<const uint8_t*>(root_nonce.data());
  auto kn = reinterpret_cast<const uint8_t*>(rank_nonce.data());

  Challenge ch;
  std::memcpy(ch.nonce, rn, 32);
  EXPECT_EQ(EncodeChallenge(ch), "SVBC" + LE(2, 2) + LE(0, 2) + root_nonce);

  std::string hello = EncodeHello(secret, rn, 5, 9, kn, info);
  EXPECT_EQ(hello, GoldenHello(secret, root_nonce, 5, 9, rank_nonce, info));
  auto hp = reinterpret_cast<const uint8_t*>(hello.data());
  HelloHeader h;
  ASSERT_TRUE(ParseHelloHeader(hp, kHelloHeaderBytes, &h).ok());
  EXPECT_EQ(h.rank, 5);
  EXPECT_EQ(h.nranks, 9);
  EXPECT_TRUE(HelloMacValid(hp, secret, rn));
  PeerInfo back;
  ASSERT_TRUE(ParseHelloBody(h, hp + kHelloHeaderBytes, hello.size() - kHelloHeaderBytes, &back).ok());
  EXPECT_EQ(back, info);
  // Any changed header byte, another nonce or another secret breaks the MAC.
  for (size_t i = 0; i < 88; ++i) {
    std::string bad = hello;
    bad[i] ^= 0x10;
    EXPECT_FALSE(HelloMacValid(reinterpret_cast<const uint8_t*>(bad.data()), secret, rn)) << i;
  }
  EXPECT_FALSE(HelloMacValid(hp, secret, kn));
  uint8_t other[32];
  std::memcpy(other, secret, 32);
  other[31] ^= 1;
  EXPECT_FALSE(HelloMacValid(hp, other, rn));

  std::vector<PeerInfo> table = RandomInfos(3, 9);
  std::string body = EncodeTable(table);
  EXPECT_EQ(body, GoldenTableBody(table));
  Digest d = Sha256Of(body.data(), body.size());
  std::string reply = EncodeReplyHeader(secret, kn, ReplyKind::kTable, body.size(), d) + body;
  EXPECT_EQ(reply, GoldenReply(secret, rank_nonce, 0, body));
  auto yp = reinterpret_cast<const uint8_t*>(reply.data());
  ReplyHeader rh;
  ASSERT_TRUE(ParseReplyHeader(yp, kReplyHeaderBytes, 3, &rh).ok());
  EXPECT_TRUE(ReplyMacValid(yp, secret, kn));
  EXPECT_FALSE(ReplyMacValid(yp, secret, rn));
  std::vector<PeerInfo> parsed;
  ASSERT_TRUE(ParseTable(yp + kReplyHeaderBytes, body.size(), 3, &parsed).ok());
  EXPECT_EQ(parsed, table);
  EXPECT_FALSE(ParseTable(yp + kReplyHeaderBytes, body.size() - 1, 3, &parsed).ok());
  EXPECT_FALSE(ParseTable(yp + kReplyHeaderBytes, body.size(), 4, &parsed).ok());
}

TEST(BootstrapSecurityTest, SecretNeverCrossesTheWire) {
  std::mt19937 rng(11);
  uint8_t secret[32];
  for (auto& b : secret) b = static_cast<uint8_t>(rng());
  std::string sent_by_rank;
  bool mac_ok = false;
  {
    FakeRoot root(secret, [&](const Socket& conn) {
      std::string nonce = Nonce(0x5a);
      std::string ch = "SVBC" + LE(2, 2) + LE(0, 2) + nonce;
      if (!SendAll(conn, ch.data(), ch.size(), DeadlineIn(5)).ok()) return;
      char head[kHelloHeaderBytes];
      if (!RecvAll(conn, head, sizeof(head), DeadlineIn(5)).ok()) return;
      HelloHeader h;
      auto hp = reinterpret_cast<const uint8_t*>(head);
      if (!ParseHelloHeader(hp, sizeof(head), &h).ok()) return;
      mac_ok = HelloMacValid(hp, secret, reinterpret_cast<const uint8_t*>(nonce.data()));
      std::string body(h.body_len(), '\0');
      if (!RecvAll(conn, &body[0], body.size(), DeadlineIn(5)).ok()) return;
      sent_by_rank = std::string(head, sizeof(head)) + body;
    });
    std::vector<PeerInfo> table;
    Status st = BootstrapExchange(root.id(), 0, 2, RandomInfos(1, 3)[0], {5, 5}, &table);
    EXPECT_EQ(st.code(), Code::kRemoteError);
  }
  ASSERT_GT(sent_by_rank.size(), kHelloHeaderBytes);
  EXPECT_TRUE(mac_ok) << "the rank proved the secret";
  std::string raw = Bytes(secret, 32), hex = Hex(secret, 32);
  for (size_t i = 0; i + 8 <= 32; ++i) {
    EXPECT_EQ(sent_by_rank.find(raw.substr(i, 8)), std::string::npos) << "secret bytes at " << i;
    EXPECT_EQ(sent_by_rank.find(hex.substr(2 * i, 16)), std::string::npos);
  }
}

// Stray connections opened before the ranks: one that sends nothing, random bytes, a hello
// with the wrong secret, a sender that drips a valid-looking hello one byte at a time and
// holds the socket, and a half hello. With the default 5 s handshake deadline a root that
// served connections one at a time would be delayed by seconds.
TEST(BootstrapSecurityTest, StrayConnectionsDoNotDelayTheJob) {
  constexpr int kRanks = 4;
  const BootstrapTimeouts t{20, 5};
  auto run_job = [&](bool strays, LogCapture* log) {
    char id[kUniqueIdBytes];
    EXPECT_TRUE(StartBootstrapRoot("lo", t, id).ok());
    UniqueId uid;
    EXPECT_TRUE(DecodeUniqueId(id, &uid).ok());
    std::vector<Socket> held;
    held.reserve(8);  // the dripper thread keeps a reference to its socket
    std::thread dripper;
    if (strays) {
      std::mt19937 rng(5);
      held.push_back(ConnectRaw(id));  // silent (reads the challenge: the root has accepted it)
      EXPECT_EQ(ReadChallengeNonce(held.back()).size(), 32u);
      held.push_back(ConnectRaw(id));  // random bytes
      std::string junk = RandomString(&rng, 200);
      EXPECT_TRUE(SendAll(held.back(), junk.data(), junk.size(), DeadlineIn(5)).ok());
      held.push_back(ConnectRaw(id));  // wrong secret
      uint8_t wrong[32];
      std::memcpy(wrong, uid.secret, 32);
      wrong[0] ^= 1;
      std::string nonce = ReadChallengeNonce(held.back());
      std::string hello = GoldenHello(wrong, nonce, 1, kRanks, Nonce(1), PeerInfo{});
      EXPECT_TRUE(SendAll(held.back(), hello.data(), hello.size(), DeadlineIn(5)).ok());
      held.push_back(ConnectRaw(id));  // half a hello, then nothing
      std::string half = GoldenHello(uid.secret, ReadChallengeNonce(held.back()), 2, kRanks,
                                     Nonce(2), PeerInfo{}).substr(0, 50);
      EXPECT_TRUE(SendAll(held.back(), half.data(), half.size(), DeadlineIn(5)).ok());
      held.push_back(ConnectRaw(id));  // slow sender holding the socket open
      EXPECT_EQ(ReadChallengeNonce(held.back()).size(), 32u);
      dripper = std::thread([&s = held.back()] {
        std::string drip = "SVBH" + LE(2, 2) + std::string(40, '\0');
        for (char c : drip) {
          if (!SendAll(s, &c, 1, DeadlineIn(1)).ok()) return;
          std::this_thread::sleep_for(std::chrono::milliseconds(100));
        }
      });
    }
    auto infos = RandomInfos(kRanks, 21);
    auto start = Clock::now();
    auto results = RunClaims(id, Honest(kRanks), infos, t);
    double seconds = Since(start);
    for (const auto& r : results) {
      EXPECT_TRUE(r.status.ok()) << r.status.ToString();
      EXPECT_EQ(r.table, infos);
    }
    if (strays) {
      dripper.join();
      for (const Socket& s : held) EXPECT_TRUE(ClosedByPeer(s));
      EXPECT_EQ(log->Count("bad magic"), 1);
      EXPECT_EQ(log->Count("failed authentication"), 1);
      EXPECT_GE(log->Count("the job ended before this connection joined"), 3);
    }
    return seconds;
  };
  LogCapture log;
  double baseline = 0, with_strays = 0;
  for (int i = 0; i < 3; ++i) baseline = std::max(baseline, run_job(false, &log));
  for (int i = 0; i < 3; ++i) {
    LogCapture per_run;
    with_strays = std::max(with_strays, run_job(true, &per_run));
  }
  std::printf("bootstrap of %d ranks, worst of 3: %.3f s without strays, %.3f s with 5 strays\n",
              kRanks, baseline, with_strays);
  EXPECT_LT(with_strays - baseline, 1.0);
}

// A flood of silent connections: beyond 512 unfinished handshakes the oldest are closed, and
// the ranks still join at once.
TEST(BootstrapSecurityTest, HandshakeFloodClosesTheOldestAndTheJobCompletes) {
  LogCapture log;
  char id[kUniqueIdBytes];
  const BootstrapTimeouts t{20, 10};
  ASSERT_TRUE(StartBootstrapRoot("lo", t, id).ok());
  std::vector<Socket> flood;
  for (int i = 0; i < 520; ++i) {
    flood.push_back(ConnectRaw(id));
    ASSERT_EQ(ReadChallengeNonce(flood.back()).size(), 32u) << i;
  }
  EXPECT_TRUE(ClosedByPeer(flood.front()));
  auto infos = RandomInfos(3, 31);
  auto start = Clock::now();
  for (const auto& r : RunClaims(id, Honest(3), infos, t)) EXPECT_TRUE(r.status.ok());
  EXPECT_LT(Since(start), 2.0);
  EXPECT_GE(log.Count("too many unfinished handshakes"), 8);
}

TEST(BootstrapSecurityTest, SlowHelloIsClosedAtTheHandshakeDeadline) {
  LogCapture log;
  char id[kUniqueIdBytes];
  ASSERT_TRUE(StartBootstrapRoot("lo", {10, 0.4}, id).ok());
  Socket s = ConnectRaw(id);
  ASSERT_EQ(ReadChallengeNonce(s).size(), 32u);
  auto start = Clock::now();
  EXPECT_TRUE(ClosedByPeer(s));
  EXPECT_LT(Since(start), 2.0);
  EXPECT_EQ(log.Count("no complete hello within 0.4 s"), 1);
  auto infos = RandomInfos(2, 2);
  for (const auto& r : RunClaims(id, Honest(2), infos, {10, 0.4})) EXPECT_TRUE(r.status.ok());
}

TEST(BootstrapSecurityTest, RankOfAnotherVersionIsNamedByTheRoot) {
  LogCapture log;
  char id[kUniqueIdBytes];
  ASSERT_TRUE(StartBootstrapRoot("lo", {1.5, 5}, id).ok());
  UniqueId uid;
  ASSERT_TRUE(DecodeUniqueId(id, &uid).ok());
  Socket s = ConnectRaw(id);
  std::string hello =
      GoldenHello(uid.secret, ReadChallengeNonce(s), 1, 2, Nonce(3), PeerInfo{}, /*version=*/3);
  ASSERT_TRUE(SendAll(s, hello.data(), hello.size(), DeadlineIn(5)).ok());
  EXPECT_TRUE(ClosedByPeer(s));
  EXPECT_EQ(log.Count("speaks bootstrap protocol version 3; this process speaks version 2"), 1);
  // The ranks that wait for the missing rank hear about it in the timeout message.
  auto results = RunClaims(id, {{0, 2}}, RandomInfos(1, 1), {1.5, 5});
  EXPECT_NE(results[0].status.message().find("rank 1 of 2 never joined"), std::string::npos)
      << results[0].status.message();
  EXPECT_NE(results[0].status.message().find("version 3"), std::string::npos)
      << results[0].status.message();
}

TEST(BootstrapSecurityTest, RootOfAnotherVersionIsAClearError) {
  uint8_t secret[32] = {1};
  FakeRoot root(secret, [](const Socket& conn) {
    std::string ch = "SVBC" + LE(3, 2) + std::string(60, '\0');  // a longer future layout
    (void)SendAll(conn, ch.data(), ch.size(), DeadlineIn(5));
    ClosedByPeer(conn);
  });
  std::vector<PeerInfo> table;
  Status st = BootstrapExchange(root.id(), 0, 2, PeerInfo{}, {5, 5}, &table);
  EXPECT_EQ(st.code(), Code::kInvalidUsage);
  EXPECT_NE(st.message().find("speaks bootstrap protocol version 3; this process speaks version 2"),
            std::string::npos)
      << st.message();
}

TEST(BootstrapSecurityTest, SilentRootFailsAtTheHandshakeDeadline) {
  uint8_t secret[32] = {2};
  FakeRoot root(secret, [](const Socket& conn) { ClosedByPeer(conn); });
  std::vector<PeerInfo> table;
  auto start = Clock::now();
  Status st = BootstrapExchange(root.id(), 0, 2, PeerInfo{}, {10, 0.5}, &table);
  EXPECT_LT(Since(start), 3.0);
  EXPECT_EQ(st.code(), Code::kRemoteError);
  EXPECT_NE(st.message().find("no challenge from bootstrap root 127.0.0.1:"), std::string::npos)
      << st.message();
}

TEST(BootstrapSecurityTest, ForgedReplyIsRejected) {
  uint8_t secret[32] = {3}, forged[32] = {4};
  std::vector<PeerInfo> infos = RandomInfos(1, 4);
  FakeRoot root(secret, [&](const Socket& conn) {
    std::string ch = "SVBC" + LE(2, 2) + LE(0, 2) + Nonce(9);
    (void)SendAll(conn, ch.data(), ch.size(), DeadlineIn(5));
    char head[kHelloHeaderBytes];
    if (!RecvAll(conn, head, sizeof(head), DeadlineIn(5)).ok()) return;
    HelloHeader h;
    if (!ParseHelloHeader(reinterpret_cast<const uint8_t*>(head), sizeof(head), &h).ok()) return;
    std::string body(h.body_len(), '\0');
    (void)RecvAll(conn, &body[0], body.size(), DeadlineIn(5));
    // A correct table under a key that is not the job's.
    std::string reply = GoldenReply(forged, Bytes(h.nonce, 32), 0, GoldenTableBody(infos));
    (void)SendAll(conn, reply.data(), reply.size(), DeadlineIn(5));
  });
  std::vector<PeerInfo> table;
  Status st = BootstrapExchange(root.id(), 0, 1, infos[0], {5, 5}, &table);
  EXPECT_EQ(st.code(), Code::kRemoteError);
  EXPECT_NE(st.message().find("failed to prove the job secret"), std::string::npos) << st.message();
  EXPECT_TRUE(table.empty());
}

struct ConflictCase {
  const char* name;
  std::vector<Claim> claims;
  const char* expect;  // in every rank's error
};
void PrintTo(const ConflictCase& c, std::ostream* os) { *os << c.name; }

class ConflictTest : public ::testing::TestWithParam<ConflictCase> {};

TEST_P(ConflictTest, EveryRankFailsWithTheReason) {
  const ConflictCase& c = GetParam();
  char id[kUniqueIdBytes];
  const BootstrapTimeouts t{10, 5};
  ASSERT_TRUE(StartBootstrapRoot("lo", t, id).ok());
  auto results = RunClaims(id, c.claims, RandomInfos(static_cast<int>(c.claims.size()), 8), t);
  for (size_t i = 0; i < results.size(); ++i) {
    const Status& st = results[i].status;
    EXPECT_EQ(st.code(), Code::kRemoteError) << "claim " << i << ": " << st.ToString();
    EXPECT_NE(st.message().find("bootstrap failed: "), std::string::npos) << st.message();
    EXPECT_NE(st.message().find(c.expect), std::string::npos) << st.message();
    EXPECT_LT(results[i].seconds, 3.0) << "well within the 10 s timeout";
  }
}

INSTANTIATE_TEST_SUITE_P(
    Claims, ConflictTest,
    ::testing::Values(
        ConflictCase{"duplicate", {{0, 4}, {1, 4}, {1, 4}, {3, 4}}, "two processes claim rank 1"},
        ConflictCase{"nranks", {{0, 4}, {1, 4}, {2, 3}, {3, 4}}, "says nranks"},
        ConflictCase{"above", {{0, 4}, {1, 4}, {4, 4}, {3, 4}}, "rank 4 at 127.0.0.1:"},
        ConflictCase{"negative", {{0, 3}, {-1, 3}, {2, 3}}, "is out of range for nranks 3"},
        ConflictCase{"zero", {{0, 2}, {0, 0}}, "claims nranks 0"}),
    [](const auto& info) { return std::string(info.param.name); });

TEST(BootstrapSecurityTest, MalformedHellosAreDroppedWhileJobCompletes) {
  LogCapture log;
  char id[kUniqueIdBytes];
  ASSERT_TRUE(StartBootstrapRoot("lo", {10, 5}, id).ok());
  UniqueId uid;
  ASSERT_TRUE(DecodeUniqueId(id, &uid).ok());
  {
    Socket s = ConnectRaw(id);  // 2 MiB of peer info announced: capped before any MAC work
    std::string hello = GoldenHello(uid.secret, ReadChallengeNonce(s), 0, 2, Nonce(1), PeerInfo{});
    hello[16 + 2] = 0x20;
    ASSERT_TRUE(SendAll(s, hello.data(), hello.size(), DeadlineIn(5)).ok());
    EXPECT_TRUE(ClosedByPeer(s));
  }
  {
    Socket s = ConnectRaw(id);  // authenticated header, body swapped after the digest
    PeerInfo info{"abcd", "host"};
    std::string hello = GoldenHello(uid.secret, ReadChallengeNonce(s), 0, 2, Nonce(2), info);
    hello[kHelloHeaderBytes] = 'X';
    ASSERT_TRUE(SendAll(s, hello.data(), hello.size(), DeadlineIn(5)).ok());
    EXPECT_TRUE(ClosedByPeer(s));
  }
  {
    Socket s = ConnectRaw(id);  // reserved bytes set
    std::string hello = GoldenHello(uid.secret, ReadChallengeNonce(s), 0, 2, Nonce(3), PeerInfo{});
    hello[6] = 1;
    ASSERT_TRUE(SendAll(s, hello.data(), hello.size(), DeadlineIn(5)).ok());
    EXPECT_TRUE(ClosedByPeer(s));
  }
  auto infos = RandomInfos(2, 3);
  for (const auto& r : RunClaims(id, Honest(2), infos, {10, 5})) {
    ASSERT_TRUE(r.status.ok()) << r.status.ToString();
    EXPECT_EQ(r.table, infos);
  }
  EXPECT_EQ(log.Count("exceeds the 1048576-byte cap"), 1);
  EXPECT_EQ(log.Count("does not match its digest"), 1);
  EXPECT_EQ(log.Count("reserved bytes set"), 1);
}

// The local address (hex as in /proc/net/tcp) of the TCP socket listening on port, or "".
std::string ListeningAddress(int port) {
  std::ifstream in("/proc/net/tcp");
  std::string line;
  char want[8];
  std::snprintf(want, sizeof(want), ":%04X", port);
  while (std::getline(in, line)) {
    std::istringstream f(line);
    std::string sl, local, remote, state;
    f >> sl >> local >> remote >> state;
    if (state == "0A" && local.size() > 5 && local.substr(local.size() - 5) == want)
      return local.substr(0, local.size() - 5);
  }
  return "";
}

TEST(BootstrapSecurityTest, ListenerBindsToTheChosenInterface) {
  char id[kUniqueIdBytes];
  ASSERT_TRUE(StartBootstrapRoot("lo", {10, 5}, id).ok());
  UniqueId uid;
  ASSERT_TRUE(DecodeUniqueId(id, &uid).ok());
  EXPECT_EQ(ListeningAddress(AddrPort(uid.root)), "0100007F");  // 127.0.0.1, not 0.0.0.0
  auto infos = RandomInfos(1, 1);
  EXPECT_TRUE(RunClaims(id, Honest(1), infos, {10, 5})[0].status.ok());

  // MASTER_ADDR that is not local: the interface's address, not the wildcard.
  uint8_t secret[32] = {7};
  char root_id[kUniqueIdBytes], rank_id[kUniqueIdBytes];
  ASSERT_TRUE(StartBootstrapRootAt("192.0.2.1", 0, secret, "lo", {10, 5}, root_id).ok());
  ASSERT_TRUE(DecodeUniqueId(root_id, &uid).ok());
  int port = AddrPort(uid.root);
  EXPECT_EQ(ListeningAddress(port), "0100007F");
  ASSERT_TRUE(MakeUniqueId("127.0.0.1", port, secret, rank_id).ok());
  EXPECT_TRUE(RunClaims(rank_id, Honest(1), infos, {10, 5})[0].status.ok());
}

}  // namespace
}  // namespace sieve::transport
