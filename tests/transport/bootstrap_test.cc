// Bootstrap tests: threads act as ranks against a real root thread over loopback; raw sockets
// play misbehaving peers. The hello/reply bytes written here double as a golden wire format.
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
#include "transport/bootstrap/socket.h"
#include "transport/bootstrap/unique_id.h"

namespace sieve::transport {
namespace {

constexpr double kTimeoutS = 10.0;

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

struct RankResult {
  Status status;
  std::vector<PeerInfo> table;
};

// Runs BootstrapExchange for each rank in `ranks` on its own thread.
std::vector<RankResult> RunRanks(const char* id, int nranks, const std::vector<int>& ranks,
                                 const std::vector<PeerInfo>& infos, double timeout_s) {
  std::vector<RankResult> results(ranks.size());
  std::vector<std::thread> threads;
  for (size_t i = 0; i < ranks.size(); ++i) {
    threads.emplace_back([&, i] {
      results[i].status =
          BootstrapExchange(id, ranks[i], nranks, infos[ranks[i]], timeout_s, &results[i].table);
    });
  }
  for (auto& t : threads) t.join();
  return results;
}

std::vector<int> AllRanks(int n) {
  std::vector<int> ranks(n);
  for (int r = 0; r < n; ++r) ranks[r] = r;
  return ranks;
}

// Captures log lines for the test's lifetime.
class LogCapture {
 public:
  LogCapture() {
    SetLogSink([this](LogLevel, const std::string& line) {
      std::lock_guard<std::mutex> lock(mu_);
      lines_.push_back(line);
    });
  }
  ~LogCapture() { SetLogSink(nullptr); }
  int Count(const std::string& needle) {
    std::lock_guard<std::mutex> lock(mu_);
    int n = 0;
    for (const auto& l : lines_) n += l.find(needle) != std::string::npos;
    return n;
  }

 private:
  std::mutex mu_;
  std::vector<std::string> lines_;
};

void PutLE(uint64_t v, int bytes, std::string* out) {
  for (int i = 0; i < bytes; ++i) out->push_back(static_cast<char>(v >> (8 * i)));
}

// The documented hello layout, written independently of bootstrap.cc.
std::string GoldenHello(const uint8_t* secret, int rank, int nranks, const PeerInfo& info) {
  std::string h = "SVBH";
  PutLE(1, 2, &h);  // version
  PutLE(0, 2, &h);
  h.append(reinterpret_cast<const char*>(secret), kSecretBytes);
  PutLE(rank, 4, &h);
  PutLE(nranks, 4, &h);
  PutLE(info.worker_address.size(), 4, &h);
  PutLE(info.host_id.size(), 4, &h);
  return h + info.worker_address + info.host_id;
}

std::string GoldenTableBody(const std::vector<PeerInfo>& infos) {
  std::string body;
  for (const auto& i : infos) {
    PutLE(i.worker_address.size(), 4, &body);
    PutLE(i.host_id.size(), 4, &body);
    body += i.worker_address + i.host_id;
  }
  return body;
}

Socket ConnectRaw(const char* id) {
  UniqueId uid;
  EXPECT_TRUE(DecodeUniqueId(id, &uid).ok());
  Socket sock;
  Status st = Connect(uid.root, DeadlineIn(5), &sock);
  EXPECT_TRUE(st.ok()) << st.ToString();
  return sock;
}

// True when the root closes this connection (within 5 s) without sending anything.
bool ClosedByRoot(const Socket& sock) {
  char byte;
  Status st = RecvAll(sock, &byte, 1, DeadlineIn(5));
  return !st.ok() && st.message().find("peer closed") != std::string::npos;
}

class ExchangeTest : public ::testing::TestWithParam<int> {};

TEST_P(ExchangeTest, EveryRankGetsTheTable) {
  const int n = GetParam();
  char id[kUniqueIdBytes];
  ASSERT_TRUE(StartBootstrapRoot("lo", kTimeoutS, id).ok());
  std::vector<PeerInfo> infos = RandomInfos(n, 1234 + n);
  std::vector<RankResult> results = RunRanks(id, n, AllRanks(n), infos, kTimeoutS);
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
      if (!StartBootstrapRoot("lo", kTimeoutS, id).ok()) return;
      std::vector<PeerInfo> infos = RandomInfos(3, 99 + j);
      auto results = RunRanks(id, 3, AllRanks(3), infos, kTimeoutS);
      ok[j] = true;
      for (auto& r : results) ok[j] = ok[j] && r.status.ok() && r.table == infos;
    });
  }
  for (auto& t : jobs) t.join();
  for (int j = 0; j < kJobs; ++j) EXPECT_TRUE(ok[j]) << "job " << j;
}

TEST(UniqueIdTest, HexRoundTripAndRejection) {
  char id[kUniqueIdBytes];
  ASSERT_TRUE(StartBootstrapRoot("lo", kTimeoutS, id).ok());
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
  auto results = RunRanks(id, 1, {0}, RandomInfos(1, 5), kTimeoutS);
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
  DeriveSecret("10.0.0.1:29500", a);
  DeriveSecret("10.0.0.1:29500", b);
  DeriveSecret("10.0.0.1:29501", c);
  EXPECT_EQ(std::memcmp(a, b, kSecretBytes), 0);
  EXPECT_NE(std::memcmp(a, c, kSecretBytes), 0);
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

TEST(BootstrapTest, BadClientsAreDroppedWhileJobCompletes) {
  LogCapture log;
  char id[kUniqueIdBytes];
  ASSERT_TRUE(StartBootstrapRoot("lo", kTimeoutS, id).ok());
  UniqueId uid;
  ASSERT_TRUE(DecodeUniqueId(id, &uid).ok());
  std::vector<PeerInfo> infos = RandomInfos(3, 77);

  Socket silent = ConnectRaw(id);  // never sends a byte
  Socket garbage = ConnectRaw(id);
  std::string junk(64, 'x');
  ASSERT_TRUE(SendAll(garbage, junk.data(), junk.size(), DeadlineIn(5)).ok());
  EXPECT_TRUE(ClosedByRoot(garbage));

  char wrong_id[kUniqueIdBytes];
  std::memcpy(wrong_id, id, kUniqueIdBytes);
  wrong_id[32] ^= 1;  // first secret byte
  std::vector<PeerInfo> wrong_table;
  Status st = BootstrapExchange(wrong_id, 1, 3, infos[1], kTimeoutS, &wrong_table);
  EXPECT_EQ(st.code(), Code::kRemoteError);
  EXPECT_NE(st.message().find("closed the connection"), std::string::npos) << st.message();

  // Two raw clients claim rank 0: whichever the root registers first wins, the other is dropped.
  PeerInfo claim_a = infos[0], claim_b = infos[0];
  claim_b.host_id += "-b";
  Socket a = ConnectRaw(id), b = ConnectRaw(id);
  std::string hello_a = GoldenHello(uid.secret, 0, 3, claim_a);
  std::string hello_b = GoldenHello(uid.secret, 0, 3, claim_b);
  ASSERT_TRUE(SendAll(a, hello_a.data(), hello_a.size(), DeadlineIn(5)).ok());
  ASSERT_TRUE(SendAll(b, hello_b.data(), hello_b.size(), DeadlineIn(5)).ok());

  std::vector<RankResult> results = RunRanks(id, 3, {1, 2}, infos, kTimeoutS);
  char header_a[16], header_b[16];
  bool a_won = RecvAll(a, header_a, 16, DeadlineIn(5)).ok();
  bool b_won = RecvAll(b, header_b, 16, DeadlineIn(5)).ok();
  ASSERT_NE(a_won, b_won);
  std::vector<PeerInfo> expected = infos;
  expected[0] = a_won ? claim_a : claim_b;
  for (const auto& r : results) {
    ASSERT_TRUE(r.status.ok()) << r.status.ToString();
    EXPECT_EQ(r.table, expected);
  }
  // The winner's reply matches the golden frame byte for byte.
  std::string body = GoldenTableBody(expected);
  std::string golden = "SVBR";
  PutLE(1, 2, &golden);
  PutLE(0, 2, &golden);
  PutLE(body.size(), 8, &golden);
  EXPECT_EQ(std::string(a_won ? header_a : header_b, 16), golden);
  std::string got(body.size(), '\0');
  ASSERT_TRUE(RecvAll(a_won ? a : b, &got[0], got.size(), DeadlineIn(5)).ok());
  EXPECT_EQ(got, body);

  EXPECT_TRUE(ClosedByRoot(silent));
  EXPECT_EQ(log.Count("bad magic"), 1);
  EXPECT_EQ(log.Count("wrong secret"), 1);
  EXPECT_EQ(log.Count("duplicate rank 0"), 1);
  EXPECT_EQ(log.Count("ended before this connection sent its hello"), 1);
}

TEST(BootstrapTest, MalformedHellosAreDropped) {
  LogCapture log;
  char id[kUniqueIdBytes];
  ASSERT_TRUE(StartBootstrapRoot("lo", kTimeoutS, id).ok());
  UniqueId uid;
  ASSERT_TRUE(DecodeUniqueId(id, &uid).ok());
  std::string out_of_range = GoldenHello(uid.secret, 2, 2, PeerInfo{});
  std::string oversized = GoldenHello(uid.secret, 0, 2, PeerInfo{});
  oversized[32 + 2] = 0x20;  // worker_address length 2 MiB, no payload follows
  for (const std::string* hello : {&out_of_range, &oversized}) {
    Socket sock = ConnectRaw(id);
    ASSERT_TRUE(SendAll(sock, hello->data(), hello->size(), DeadlineIn(5)).ok());
    EXPECT_TRUE(ClosedByRoot(sock));
  }
  std::vector<PeerInfo> infos = RandomInfos(2, 3);
  for (const auto& r : RunRanks(id, 2, AllRanks(2), infos, kTimeoutS)) {
    ASSERT_TRUE(r.status.ok()) << r.status.ToString();
    EXPECT_EQ(r.table, infos);
  }
  EXPECT_EQ(log.Count("rank 2 out of range for nranks 2"), 1);
  EXPECT_EQ(log.Count("exceeds the 1048576-byte cap"), 1);
}

TEST(BootstrapTest, MissingRankFailsEveryJoinedRankWithinTimeout) {
  constexpr double kShortS = 1.5;
  auto start = std::chrono::steady_clock::now();
  char id[kUniqueIdBytes];
  ASSERT_TRUE(StartBootstrapRoot("lo", kShortS, id).ok());
  std::vector<PeerInfo> infos = RandomInfos(4, 7);
  std::vector<RankResult> results = RunRanks(id, 4, {0, 1, 3}, infos, kShortS);
  double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(elapsed, kShortS + 2.0);
  for (const auto& r : results) {
    EXPECT_EQ(r.status.code(), Code::kRemoteError);
    EXPECT_NE(r.status.message().find("rank 2 of 4 never joined within 1.5 s"), std::string::npos)
        << r.status.message();
  }
}

TEST(BootstrapTest, UnreachableRootTimesOutNamingIt) {
  // A port that was free a moment ago and has no listener now.
  sockaddr_storage lo{};
  lo.ss_family = AF_INET;
  reinterpret_cast<sockaddr_in*>(&lo)->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  Socket probe;
  int port = 0;
  ASSERT_TRUE(Listen(lo, 0, &probe, &port).ok());
  probe.Close();
  uint8_t secret[kSecretBytes] = {};
  char id[kUniqueIdBytes];
  ASSERT_TRUE(MakeUniqueId("127.0.0.1", port, secret, id).ok());
  std::vector<PeerInfo> table;
  Status st = BootstrapExchange(id, 0, 2, PeerInfo{}, 0.3, &table);
  EXPECT_EQ(st.code(), Code::kRemoteError);
  EXPECT_NE(st.message().find("127.0.0.1:" + std::to_string(port)), std::string::npos)
      << st.message();
}

TEST(BootstrapTest, MasterAddrPortLaunch) {
  sockaddr_storage lo{};
  lo.ss_family = AF_INET;
  reinterpret_cast<sockaddr_in*>(&lo)->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  Socket probe;
  int port = 0;
  ASSERT_TRUE(Listen(lo, 0, &probe, &port).ok());
  probe.Close();

  uint8_t secret[kSecretBytes];
  DeriveSecret("127.0.0.1:" + std::to_string(port), secret);
  char root_id[kUniqueIdBytes], rank_id[kUniqueIdBytes];
  ASSERT_TRUE(StartBootstrapRootAt("127.0.0.1", port, secret, kTimeoutS, root_id).ok());
  ASSERT_TRUE(MakeUniqueId("127.0.0.1", port, secret, rank_id).ok());
  EXPECT_EQ(std::memcmp(root_id, rank_id, kUniqueIdBytes), 0);

  std::vector<PeerInfo> infos = RandomInfos(3, 11);
  std::vector<RankResult> results = RunRanks(rank_id, 3, AllRanks(3), infos, kTimeoutS);
  for (const auto& r : results) {
    ASSERT_TRUE(r.status.ok()) << r.status.ToString();
    EXPECT_EQ(r.table, infos);
  }
  EXPECT_EQ(MakeUniqueId("127.0.0.1", 0, secret, rank_id).code(), Code::kInvalidArgument);
}

}  // namespace
}  // namespace sieve::transport
