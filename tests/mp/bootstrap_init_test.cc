// Bootstrap hardening through the C API in real processes: conflicting rank claims fail init on
// every rank with the reason, stray connections to the root do not delay init, a root of
// another protocol version is a clear init error, and the root listens on SIEVE_SOCKET_IFNAME.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/mman.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "sieve.h"
#include "support/bootstrap_peer.h"
#include "support/mp_harness.h"
#include "transport/bootstrap/unique_id.h"

namespace sieve_test {
namespace {

using Clock = std::chrono::steady_clock;
using sieve::transport::Socket;

double Since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// Init seconds per rank, written by the children into a shared mapping.
struct Times {
  std::atomic<int> micros[8];
};

class SharedTimes {
 public:
  SharedTimes() {
    void* mem = mmap(nullptr, sizeof(Times), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
                     -1, 0);
    t_ = new (mem) Times();
    for (auto& m : t_->micros) m.store(-1);
  }
  ~SharedTimes() { munmap(t_, sizeof(Times)); }
  Times* operator->() { return t_; }
  double MaxSeconds(int n) const {
    int worst = 0;
    for (int r = 0; r < n; ++r) worst = std::max(worst, t_->micros[r].load());
    return worst / 1e6;
  }

 private:
  Times* t_;
};

struct Claim {
  int rank, nranks;
};

struct ConflictCase {
  const char* name;
  std::vector<Claim> claims;  // per harness rank (harness rank 0 hosts the root)
  const char* expect;         // in the message of every rank whose own arguments are valid
};
void PrintTo(const ConflictCase& c, std::ostream* os) { *os << c.name; }

class InitConflictTest : public ::testing::TestWithParam<ConflictCase> {};

TEST_P(InitConflictTest, EveryRankFailsInitWithTheReason) {
  const ConflictCase& c = GetParam();
  RankSpec spec;
  spec.nranks = static_cast<int>(c.claims.size());
  spec.kill_after_s = 40;
  spec.env = {{"SIEVE_TIMEOUT", "10"}};
  std::string failures = RunRanks(spec, [&](int rank, int, const sieveUniqueId& id) {
    Claim claim = c.claims[rank];
    sieveComm_t comm = nullptr;
    auto start = Clock::now();
    sieveResult_t res = sieveCommInitRank(&comm, claim.nranks, id, claim.rank);
    double took = Since(start);
    std::string msg = sieveGetLastError(nullptr);
    std::fprintf(stderr, "process %d (claims rank %d of %d): init returned %d after %.2f s: %s\n",
                 rank, claim.rank, claim.nranks, int(res), took, msg.c_str());
    RANK_CHECK(res != sieveSuccess, "init succeeded despite the conflict");
    bool own_args_bad = claim.rank < 0 || claim.rank >= claim.nranks;
    if (own_args_bad) {
      EXPECT_EQ(res, sieveInvalidArgument) << msg;
      EXPECT_NE(msg.find("is not a rank of this communicator"), std::string::npos) << msg;
    } else {
      EXPECT_EQ(res, sieveRemoteError) << msg;
      EXPECT_NE(msg.find("bootstrap failed: "), std::string::npos) << msg;
      EXPECT_NE(msg.find(c.expect), std::string::npos) << msg;
    }
    EXPECT_LT(took, 6.0) << "well within SIEVE_TIMEOUT=10";
    return 0;
  });
  EXPECT_EQ(failures, "");
}

INSTANTIATE_TEST_SUITE_P(
    Claims, InitConflictTest,
    ::testing::Values(
        ConflictCase{"duplicate", {{0, 4}, {1, 4}, {1, 4}, {3, 4}}, "two processes claim rank 1"},
        ConflictCase{"nranks", {{0, 4}, {1, 4}, {2, 3}, {3, 4}}, "says nranks"},
        ConflictCase{"out_of_range_on_root_host",
                     {{4, 4}, {1, 4}, {2, 4}, {3, 4}},
                     "is out of range for nranks 4"},
        ConflictCase{"negative", {{0, 3}, {1, 3}, {-1, 3}}, "is out of range for nranks 3"}),
    [](const auto& info) { return std::string(info.param.name); });

// Opens stray connections to the root named by id: silent, random bytes, a wrong-secret hello
// and a slow sender that drips a hello. Returns the sockets (kept open by the caller).
std::vector<Socket> OpenStrays(const sieveUniqueId& id, std::thread* dripper) {
  using namespace sieve::transport;
  std::vector<Socket> held;
  held.reserve(4);
  UniqueId uid;
  if (!DecodeUniqueId(id.internal, &uid).ok()) return held;
  std::mt19937 rng(17);
  held.push_back(ConnectRaw(id.internal));
  held.push_back(ConnectRaw(id.internal));
  std::string junk(300, '\0');
  for (char& ch : junk) ch = static_cast<char>(rng());
  (void)SendAll(held.back(), junk.data(), junk.size(), DeadlineIn(2));
  held.push_back(ConnectRaw(id.internal));
  uint8_t wrong[32];
  std::memcpy(wrong, uid.secret, 32);
  wrong[5] ^= 0x40;
  std::string hello = GoldenHello(wrong, ReadChallengeNonce(held.back()), 1, 4,
                                  std::string(32, 'n'), PeerInfo{"x", "y"});
  (void)SendAll(held.back(), hello.data(), hello.size(), DeadlineIn(2));
  held.push_back(ConnectRaw(id.internal));
  *dripper = std::thread([&s = held.back()] {
    std::string drip = "SVBH" + LE(2, 2) + std::string(60, '\0');
    for (char ch : drip) {
      if (!SendAll(s, &ch, 1, DeadlineIn(1)).ok()) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  });
  return held;
}

// Worst init time over 4 ranks, with or without strays opened by the root's process first.
double WorstInitSeconds(bool strays) {
  SharedTimes times;
  RankSpec spec;
  spec.nranks = 4;
  spec.kill_after_s = 60;
  spec.env = {{"SIEVE_TIMEOUT", "20"}};
  std::string failures = RunRanks(spec, [&](int rank, int nranks, const sieveUniqueId& id) {
    std::vector<Socket> held;
    std::thread dripper;
    if (strays && rank == 0) held = OpenStrays(id, &dripper);
    sieveComm_t comm = nullptr;
    auto start = Clock::now();
    sieveResult_t res = sieveCommInitRank(&comm, nranks, id, rank);
    times->micros[rank].store(static_cast<int>(Since(start) * 1e6));
    if (dripper.joinable()) dripper.join();
    RANK_CHECK(res == sieveSuccess, "%s", sieveGetLastError(nullptr));
    std::vector<int> send(1001, rank + 1), recv(1001, 0);
    RANK_CHECK(sieveAllReduce(send.data(), recv.data(), send.size(), sieveInt32, sieveSum, comm,
                              nullptr) == sieveSuccess,
               "%s", sieveGetLastError(comm));
    for (int v : recv) RANK_CHECK(v == nranks * (nranks + 1) / 2, "wrong sum %d", v);
    RANK_CHECK(sieveCommDestroy(comm) == sieveSuccess, "destroy");
    return 0;
  });
  EXPECT_EQ(failures, "");
  return times.MaxSeconds(4);
}

TEST(BootstrapInitTest, StrayConnectionsDoNotDelayInit) {
  double without = 0, with = 0;
  for (int i = 0; i < 2; ++i) without = std::max(without, WorstInitSeconds(false));
  for (int i = 0; i < 2; ++i) with = std::max(with, WorstInitSeconds(true));
  std::printf("sieveCommInitRank on 4 ranks, worst of 2 runs: %.3f s without strays, %.3f s with "
              "4 strays (handshake deadline 5 s)\n",
              without, with);
  EXPECT_LT(with - without, 1.0);
}

// torchrun-style launch: the job key comes from SIEVE_BOOTSTRAP_SECRET; a rank with another
// secret is refused by the root, and the other rank learns that it never joined.
TEST(BootstrapInitTest, MasterAddrLaunchIsKeyedBySieveBootstrapSecret) {
  for (bool same : {true, false}) {
    const int port = sieve::transport::FreeLoopbackPort();
    ASSERT_GT(port, 0);
    RankSpec spec;
    spec.nranks = 2;
    spec.kill_after_s = 40;
    spec.env = {{"SIEVE_TIMEOUT", "3"},
                {"MASTER_ADDR", "127.0.0.1"},
                {"MASTER_PORT", std::to_string(port)},
                {"WORLD_SIZE", "2"}};
    std::string failures = RunRanks(spec, [&](int rank, int nranks, const sieveUniqueId&) {
      setenv("RANK", std::to_string(rank).c_str(), 1);
      setenv("SIEVE_BOOTSTRAP_SECRET", same || rank == 0 ? "s3cret" : "another", 1);
      sieveComm_t comm = nullptr;
      sieveResult_t res = sieveCommInitFromEnv(&comm);
      std::string msg = sieveGetLastError(nullptr);
      std::fprintf(stderr, "rank %d (same secret: %d): %d %s\n", rank, int(same), int(res),
                   msg.c_str());
      if (same) {
        RANK_CHECK(res == sieveSuccess, "%s", msg.c_str());
        int v = rank + 1, sum = 0;
        RANK_CHECK(sieveAllReduce(&v, &sum, 1, sieveInt32, sieveSum, comm, nullptr) == sieveSuccess,
                   "%s", sieveGetLastError(comm));
        RANK_CHECK(sum == 3, "sum %d", sum);
        RANK_CHECK(sieveCommDestroy(comm) == sieveSuccess, "destroy");
      } else if (rank == 1) {
        RANK_CHECK(res == sieveRemoteError, "%s", msg.c_str());
        EXPECT_NE(msg.find("rejected this rank's hello"), std::string::npos) << msg;
      } else {
        RANK_CHECK(res == sieveRemoteError, "%s", msg.c_str());
        EXPECT_NE(msg.find("rank 1 of 2 never joined"), std::string::npos) << msg;
      }
      (void)nranks;
      return 0;
    });
    EXPECT_EQ(failures, "") << "same secret: " << same;
  }
}

// Alone with its own root and invalid arguments, a process tells the root and returns within
// the handshake deadline (nobody else is coming to hear the reason).
TEST(BootstrapInitTest, BadArgumentsAloneReturnWithinTheHandshakeDeadline) {
  setenv("SIEVE_BOOTSTRAP_HANDSHAKE_TIMEOUT", "1", 1);
  sieveUniqueId id;
  ASSERT_EQ(sieveGetUniqueId(&id), sieveSuccess);
  for (int nranks : {0, 2}) {
    sieveComm_t comm = nullptr;
    auto start = Clock::now();
    EXPECT_EQ(sieveCommInitRank(&comm, nranks, id, 2), sieveInvalidArgument);
    EXPECT_LT(Since(start), 3.0);
    std::string msg = sieveGetLastError(nullptr);
    EXPECT_NE(msg.find(nranks == 0 ? "nranks 0 is out of range" : "rank 2 is not a rank"),
              std::string::npos)
        << msg;
  }
  unsetenv("SIEVE_BOOTSTRAP_HANDSHAKE_TIMEOUT");
}

TEST(BootstrapInitTest, RootOfAnotherVersionIsAClearInitError) {
  uint8_t secret[32] = {9};
  sieve::transport::FakeRoot root(secret, [](const Socket& conn) {
    std::string ch = "SVBC" + sieve::transport::LE(7, 2) + std::string(34, '\0');
    (void)sieve::transport::SendAll(conn, ch.data(), ch.size(), sieve::transport::DeadlineIn(5));
    sieve::transport::ClosedByPeer(conn);
  });
  sieveUniqueId id;
  std::memcpy(id.internal, root.id(), sizeof(id.internal));
  sieveComm_t comm = nullptr;
  EXPECT_EQ(sieveCommInitRank(&comm, 2, id, 1), sieveInvalidUsage);
  std::string msg = sieveGetLastError(nullptr);
  EXPECT_NE(msg.find("speaks bootstrap protocol version 7; this process speaks version 2"),
            std::string::npos)
      << msg;
}

TEST(BootstrapInitTest, RootListensOnTheChosenInterface) {
  setenv("SIEVE_SOCKET_IFNAME", "lo", 1);
  sieveUniqueId id;
  ASSERT_EQ(sieveGetUniqueId(&id), sieveSuccess);
  sieve::transport::UniqueId uid;
  ASSERT_TRUE(sieve::transport::DecodeUniqueId(id.internal, &uid).ok());
  int port = sieve::transport::AddrPort(uid.root);
  char want[8];
  std::snprintf(want, sizeof(want), ":%04X", port);
  std::ifstream in("/proc/net/tcp");
  std::string line, bound;
  while (std::getline(in, line)) {
    std::istringstream f(line);
    std::string sl, local, remote, state;
    f >> sl >> local >> remote >> state;
    if (state == "0A" && local.size() > 5 && local.substr(local.size() - 5) == want)
      bound = local.substr(0, local.size() - 5);
  }
  EXPECT_EQ(bound, "0100007F") << "listening on 127.0.0.1 only, not on every address";
  sieveComm_t comm = nullptr;  // finish the job so the root thread ends
  ASSERT_EQ(sieveCommInitRank(&comm, 1, id, 0), sieveSuccess) << sieveGetLastError(nullptr);
  EXPECT_EQ(sieveCommDestroy(comm), sieveSuccess);
}

}  // namespace
}  // namespace sieve_test
