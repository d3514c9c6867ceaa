// Bootstrap tests: threads act as ranks against a real root thread over loopback; raw sockets
// play misbehaving peers and fake roots. The frames written here double as a golden wire format.
#include "transport/bootstrap/bootstrap.h"

#include <gtest/gtest.h>
#include <netinet/in.h>

#include <chrono>
#include <cstring>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "core/log.h"
#include "support/bootstrap_peer.h"
#include "support/log_capture.h"
#include "transport/bootstrap/socket.h"
#include "transport/bootstrap/unique_id.h"

namespace sieve::transport {
namespace {

constexpr double kTimeoutS = 10.0;
const BootstrapTimeouts kTimeouts{kTimeoutS, 5.0};

BootstrapTimeouts Timeouts(double job_s) { return BootstrapTimeouts{job_s, 5.0}; }

PeerInfo RandomPeerInfo(std::mt19937* rng, int rank) {
  std::uniform_int_distribution<int> len(0, 300), byte(0, 255);
  PeerInfo info;
  info.worker_address.resize(len(*rng));
  for (char& c : info.worker_address) c = static_cast<char>(byte(*rng) % 3 == 0 ? 0 : byte(*rng));
  info.host_id = std::string("host\0", 5) + std::to_string(rank);
  return info;
}

std::vector<PeerInfo> RandomInfos(int n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<PeerInfo> infos;
  for (int r = 0; r < n; ++r) infos.push_back(RandomPeerInfo(&rng, r));
  return infos;
}

// BootstrapExchange for each rank in `ranks` (with infos[rank]) on its own thread.
std::vector<RankResult> RunRanks(const char* id, int nranks, const std::vector<int>& ranks,
                                 const std::vector<PeerInfo>& infos, BootstrapTimeouts timeouts) {
  std::vector<Claim> claims;
  std::vector<PeerInfo> theirs;
  for (int r : ranks) {
    claims.push_back({r, nranks});
    theirs.push_back(infos[r]);
  }
  return RunClaims(id, claims, theirs, timeouts);
}

std::vector<int> AllRanks(int n) {
  std::vector<int> ranks(n);
  for (int r = 0; r < n; ++r) ranks[r] = r;
  return ranks;
}

using sieve_test::LogCapture;

class ExchangeTest : public ::testing::TestWithParam<int> {};

TEST_P(ExchangeTest, EveryRankGetsTheTable) {
  const int n = GetParam();
  char id[kUniqueIdBytes];
  ASSERT_TRUE(StartBootstrapRoot("lo", kTimeouts, id).ok());
  std::vector<PeerInfo> infos = RandomInfos(n, 1234 + n);
  std::vector<RankResult> results = RunRanks(id, n, AllRanks(n), infos, kTimeouts);
  for (int r = 0; r < n; ++r) {
    ASSERT_TRUE(results[r].status.ok()) << "rank " << r << ": " << results[r].status.ToString();
    EXPECT_EQ(results[r].table, infos) << "rank " << r;
  }
}

INSTANTIATE_TEST_SUITE_P(Sizes, ExchangeTest, ::testing::Values(1, 2, 3, 8));

TEST(BootstrapTest, ManyConcurrentJobsInOneProcess) {
  constexpr int kJobs = 6;
  std::vector<std::thread> jobs;
  std::vector<int> ok(kJobs, 0);  // not vector<bool>: threads write neighbouring elements
  for (int j = 0; j < kJobs; ++j) {
    jobs.emplace_back([&ok, j] {
      char id[kUniqueIdBytes];
      if (!StartBootstrapRoot("lo", kTimeouts, id).ok()) return;
      std::vector<PeerInfo> infos = RandomInfos(3, 99 + j);
      auto results = RunRanks(id, 3, AllRanks(3), infos, kTimeouts);
      ok[j] = true;
      for (auto& r : results) ok[j] = ok[j] && r.status.ok() && r.table == infos;
    });
  }
  for (auto& t : jobs) t.join();
  for (int j = 0; j < kJobs; ++j) EXPECT_TRUE(ok[j]) << "job " << j;
}

TEST(UniqueIdTest, HexRoundTripAndRejection) {
  char id[kUniqueIdBytes];
  ASSERT_TRUE(StartBootstrapRoot("lo", kTimeouts, id).ok());
  std::string hex = IdToHex(id);
  ASSERT_EQ(hex.size(), 256u);
  EXPECT_EQ(hex.find_first_not_of("0123456789abcdef"), std::string::npos);
  char back[kUniqueIdBytes];
  ASSERT_TRUE(IdFromHex(hex, back).ok());
  EXPECT_EQ(std::memcmp(id, back, kUniqueIdBytes), 0);
  UniqueId uid;
  ASSERT_TRUE(DecodeUniqueId(back, &uid).ok());
  EXPECT_EQ(uid.root.ss_family, AF_INET);
  EXPECT_EQ(AddrToString(uid.root).rfind("127.", 0), 0u);

  for (const std::string& bad : {std::string(), hex.substr(1), hex + "0", hex.substr(0, 255) + "g",
                                 " " + hex.substr(1), hex.substr(0, 100) + "-" + hex.substr(101)}) {
    Status st = IdFromHex(bad, back);
    EXPECT_EQ(st.code(), Code::kInvalidArgument) << bad;
    EXPECT_NE(st.message().find("unique id"), std::string::npos) << st.message();
  }
  // Connect to the job so its root thread ends now rather than at the timeout.
  auto results = RunRanks(id, 1, {0}, RandomInfos(1, 5), kTimeouts);
  EXPECT_TRUE(results[0].status.ok());
}

TEST(UniqueIdTest, RandomBlobIsNotAnId) {
  std::mt19937 rng(42);
  for (int trial = 0; trial < 100; ++trial) {
    char blob[kUniqueIdBytes];
    for (char& c : blob) c = static_cast<char>(rng());
    UniqueId uid;
    Status st = DecodeUniqueId(blob, &uid);
    EXPECT_EQ(st.code(), Code::kInvalidArgument);
    EXPECT_NE(st.message().find("not a Sieve unique id"), std::string::npos) << st.message();
  }
}

TEST(UniqueIdTest, DeriveSecretIsDeterministicAndKeyed) {
  uint8_t a[kSecretBytes], b[kSecretBytes], c[kSecretBytes];
  DeriveSecret("", "10.0.0.1:29500", a);
  DeriveSecret("", "10.0.0.1:29500", b);
  DeriveSecret("", "10.0.0.1:29501", c);
  EXPECT_EQ(std::memcmp(a, b, kSecretBytes), 0);
  EXPECT_NE(std::memcmp(a, c, kSecretBytes), 0);
  DeriveSecret("shared key", "10.0.0.1:29500", c);
  EXPECT_NE(std::memcmp(a, c, kSecretBytes), 0);
  // It is HMAC-SHA-256(key, text) (RFC 4231 test case 2).
  DeriveSecret("Jefe", "what do ya want for nothing?", a);
  EXPECT_EQ(Hex(a, kSecretBytes),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
}

TEST(SocketTest, InterfaceSelection) {
  sockaddr_storage addr;
  std::string name;
  for (const char* spec : {"lo", "=lo", "l"}) {
    ASSERT_TRUE(FindInterfaceAddress(spec, &addr, &name).ok()) << spec;
    EXPECT_EQ(name, "lo") << spec;
  }
  EXPECT_TRUE(FindInterfaceAddress("", &addr, &name).ok());
  if (FindInterfaceAddress("^lo", &addr, &name).ok()) {
    EXPECT_NE(name, "lo");
  }
  Status st = FindInterfaceAddress("=l", &addr, &name);
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_NE(st.message().find("'=l'"), std::string::npos) << st.message();
}

TEST(BootstrapTest, MissingRankFailsEveryJoinedRankWithinTimeout) {
  constexpr double kShortS = 1.5;
  auto start = std::chrono::steady_clock::now();
  char id[kUniqueIdBytes];
  ASSERT_TRUE(StartBootstrapRoot("lo", Timeouts(kShortS), id).ok());
  std::vector<PeerInfo> infos = RandomInfos(4, 7);
  std::vector<RankResult> results = RunRanks(id, 4, {0, 1, 3}, infos, Timeouts(kShortS));
  double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(elapsed, kShortS + 2.0);
  for (const auto& r : results) {
    EXPECT_EQ(r.status.code(), Code::kRemoteError);
    EXPECT_NE(r.status.message().find("rank 2 of 4 never joined within 1.5 s"), std::string::npos)
        << r.status.message();
  }
}

TEST(BootstrapTest, UnreachableRootTimesOutNamingIt) {
  const int port = FreeLoopbackPort();
  ASSERT_GT(port, 0);
  uint8_t secret[kSecretBytes] = {};
  char id[kUniqueIdBytes];
  ASSERT_TRUE(MakeUniqueId("127.0.0.1", port, secret, id).ok());
  std::vector<PeerInfo> table;
  Status st = BootstrapExchange(id, 0, 2, PeerInfo{}, Timeouts(0.3), &table);
  EXPECT_EQ(st.code(), Code::kRemoteError);
  EXPECT_NE(st.message().find("127.0.0.1:" + std::to_string(port)), std::string::npos)
      << st.message();
}

TEST(BootstrapTest, MasterAddrPortLaunch) {
  const int port = FreeLoopbackPort();
  ASSERT_GT(port, 0);

  uint8_t secret[kSecretBytes];
  DeriveSecret("", "127.0.0.1:" + std::to_string(port), secret);
  char root_id[kUniqueIdBytes], rank_id[kUniqueIdBytes];
  ASSERT_TRUE(StartBootstrapRootAt("127.0.0.1", port, secret, "", kTimeouts, root_id).ok());
  ASSERT_TRUE(MakeUniqueId("127.0.0.1", port, secret, rank_id).ok());
  EXPECT_EQ(std::memcmp(root_id, rank_id, kUniqueIdBytes), 0);

  std::vector<PeerInfo> infos = RandomInfos(3, 11);
  std::vector<RankResult> results = RunRanks(rank_id, 3, AllRanks(3), infos, kTimeouts);
  for (const auto& r : results) {
    ASSERT_TRUE(r.status.ok()) << r.status.ToString();
    EXPECT_EQ(r.table, infos);
  }
  EXPECT_EQ(MakeUniqueId("127.0.0.1", 0, secret, rank_id).code(), Code::kInvalidArgument);
}

}  // namespace
}  // namespace sieve::transport
