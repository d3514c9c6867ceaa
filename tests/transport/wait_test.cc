// ProgressUntil's idle behaviour over a fake transport: after the spin phase
// it sleeps on the transport's events in bounded slices, and the abort flag,
// the timeout and peer checks are still honoured while it sleeps.
#include "transport/wait.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

namespace sieve::transport {
namespace {

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// Nothing ever completes; counts progress calls and sleeps as asked.
class IdleTransport : public Transport {
 public:
  int rank() const override { return 0; }
  int size() const override { return 2; }
  const std::string& LocalAddress() const override { return address_; }
  Status SetPeers(std::vector<PeerAddress>) override { return Status::OK(); }
  void Shutdown(double, bool) override {}
  Status Isend(int, uint64_t, const void*, size_t, MemoryType, Request*) override {
    return Status::OK();
  }
  Status Irecv(int, uint64_t, void*, size_t, MemoryType, Request*) override {
    return Status::OK();
  }
  bool Progress() override {
    ++progress_calls;
    return false;
  }
  void WaitForEvents(double timeout_s) override {
    ++waits;
    longest_wait = std::max(longest_wait, timeout_s);
    std::this_thread::sleep_for(std::chrono::duration<double>(timeout_s));
  }
  void Cancel(Request* const*, size_t) override {}
  uint64_t completions() const override { return 0; }
  std::string PeerFailure(int) const override { return ""; }
  void NotifyPeersOfFailure(uint32_t, const std::string&) override {}
  Notice FailureNotice() override { return {}; }
  std::string Describe() const override { return "idle"; }
  PeerRoute DescribePeer(int) override { return {}; }

  uint64_t progress_calls = 0;
  uint64_t waits = 0;
  double longest_wait = 0;
  std::string address_ = "idle";
};

WaitOptions Options() {
  WaitOptions o;
  o.timeout_s = 30;
  o.spin_s = 50e-6;
  o.sleep_s = 2e-3;
  return o;
}

TEST(WaitTest, IdleWaitSleepsInBoundedSlices) {
  IdleTransport t;
  auto start = Clock::now();
  ASSERT_TRUE(ProgressUntil(&t, [&] { return SecondsSince(start) > 0.1; }, Options()).ok());
  EXPECT_GT(t.waits, 10u);
  EXPECT_LE(t.longest_wait, 2e-3);
  // A spinning loop makes millions of calls in 0.1 s; sleeping, one or two per slice.
  EXPECT_LT(t.progress_calls, 10000u);
}

TEST(WaitTest, AbortFromAnotherThreadEndsASleepingWait) {
  IdleTransport t;
  std::atomic<bool> abort{false};
  WaitOptions o = Options();
  o.abort = &abort;
  std::thread aborter([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    abort = true;
  });
  auto start = Clock::now();
  Status st = ProgressUntil(&t, [] { return false; }, o);
  double took = SecondsSince(start);
  aborter.join();
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("aborted"), std::string::npos) << st.ToString();
  EXPECT_LT(took, 0.5);
}

TEST(WaitTest, TimeoutAndPeerChecksAreSeenWhileSleeping) {
  IdleTransport t;
  WaitOptions o = Options();
  o.timeout_s = 0.05;
  auto start = Clock::now();
  Status st = ProgressUntil(&t, [] { return false; }, o);
  EXPECT_NE(st.message().find("SIEVE_TIMEOUT"), std::string::npos) << st.ToString();
  EXPECT_LT(SecondsSince(start), 0.5);

  int checks = 0;
  o.timeout_s = 30;
  o.check_peers = [&]() { return ++checks < 5 ? Status::OK() : Status::RemoteError("rank 1 died"); };
  st = ProgressUntil(&t, [] { return false; }, o);
  EXPECT_NE(st.message().find("rank 1 died"), std::string::npos) << st.ToString();
  EXPECT_EQ(checks, 5);
}

}  // namespace
}  // namespace sieve::transport
