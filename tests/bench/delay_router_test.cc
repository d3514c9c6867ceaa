// The testbed's delay router (bench/testbed/delay_queue.h, delay_loop.h): its queue keeps
// packets in order and byte for byte across many wraps of its ring, never holds more
// than its capacity (a full ring drops), loses packets at the asked rate (repeatably
// for a seed); and its loop, over a socket pair standing in for the TUN device, hands
// every packet back no earlier than the delay and, in the median, within 1 ms of it.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <deque>
#include <random>
#include <thread>
#include <vector>

#include "delay_loop.h"
#include "delay_queue.h"

namespace {

// Queues a packet of `len` bytes, each byte `fill`; false when the ring is full.
bool Push(dq* q, size_t len, unsigned char fill, uint64_t now, size_t max_len = 0) {
  unsigned char* slot = dq_reserve(q, std::max(len, max_len));
  if (slot == nullptr) {
    dq_drop_full(q);
    return false;
  }
  std::memset(slot, fill, len);
  EXPECT_EQ(dq_commit(q, len, now), DQ_QUEUED);
  return true;
}

TEST(DelayQueueTest, KeepsOrderAndBytesAcrossWraps) {
  dq q;
  ASSERT_EQ(dq_init(&q, 64 << 10, 1000, 0.0, 1), 0);
  std::mt19937 rng(7);
  std::deque<std::pair<size_t, unsigned char>> model;
  unsigned char next = 0;
  for (int i = 0; i < 100000; ++i) {
    if (rng() % 3 != 0) {  // push twice as often as pop: the ring fills and wraps
      size_t len = rng() % 3000;
      if (Push(&q, len, next, i)) model.emplace_back(len, next++);
    } else if (!model.empty()) {
      const unsigned char* data;
      size_t len;
      uint64_t due;
      ASSERT_EQ(dq_peek(&q, &data, &len, &due), 1);
      ASSERT_EQ(len, model.front().first);
      for (size_t b = 0; b < len; ++b) ASSERT_EQ(data[b], model.front().second);
      dq_pop(&q);
      model.pop_front();
    }
    ASSERT_EQ(dq_count(&q), model.size());
  }
  EXPECT_GT(q.stats.dropped_full, 0u);  // it did fill up
  dq_free(&q);
}

TEST(DelayQueueTest, DueTimeIsArrivalPlusDelay) {
  dq q;
  ASSERT_EQ(dq_init(&q, 1 << 20, 25000000, 0.0, 1), 0);
  ASSERT_TRUE(Push(&q, 100, 1, 5));
  ASSERT_TRUE(Push(&q, 100, 2, 9));
  const unsigned char* data;
  size_t len;
  uint64_t due;
  ASSERT_EQ(dq_peek(&q, &data, &len, &due), 1);
  EXPECT_EQ(due, 25000005u);
  dq_pop(&q);
  ASSERT_EQ(dq_peek(&q, &data, &len, &due), 1);
  EXPECT_EQ(due, 25000009u);
  dq_pop(&q);
  EXPECT_EQ(dq_peek(&q, &data, &len, &due), 0);
  dq_free(&q);
}

TEST(DelayQueueTest, MemoryIsBoundedByTheCapacity) {
  const size_t cap = 1 << 20;
  dq q;
  ASSERT_EQ(dq_init(&q, cap, 0, 0.0, 1), 0);
  // Reservations of the largest TUN packet, 1500-byte packets: the ring fills to within
  // one reservation of its capacity, then drops; it never grows.
  size_t queued = 0;
  for (int i = 0; i < 2000; ++i) queued += Push(&q, 1500, 0, 0, 65536 + 256);
  EXPECT_LT(queued, 2000u);
  EXPECT_EQ(q.stats.dropped_full, 2000u - queued);
  EXPECT_LE(q.stats.max_used, cap);
  EXPECT_GE(q.stats.max_used, cap - 2 * (65536 + 256 + 32));
  EXPECT_EQ(q.cap, cap);
  // Drained, it takes as much again.
  while (dq_count(&q) > 0) dq_pop(&q);
  size_t again = 0;
  for (int i = 0; i < 2000; ++i) again += Push(&q, 1500, 0, 0, 65536 + 256);
  EXPECT_EQ(again, queued);
  dq_free(&q);
}

TEST(DelayQueueTest, RejectsBadArguments) {
  dq q;
  EXPECT_EQ(dq_init(&q, 16, 0, 0.0, 1), -1);         // no room for a record
  EXPECT_EQ(dq_init(&q, 1 << 20, 0, -0.1, 1), -1);   // not a probability
  EXPECT_EQ(dq_init(&q, 1 << 20, 0, 1.5, 1), -1);
  ASSERT_EQ(dq_init(&q, 4096, 0, 0.0, 1), 0);
  EXPECT_EQ(dq_reserve(&q, 8192), nullptr);  // larger than the ring
  dq_free(&q);
}

// Lost packets out of n at rate p with seed s.
uint64_t Lost(double p, uint64_t seed, int n) {
  dq q;
  EXPECT_EQ(dq_init(&q, 1 << 16, 0, p, seed), 0);
  for (int i = 0; i < n; ++i) {
    unsigned char* slot = dq_reserve(&q, 64);
    EXPECT_NE(slot, nullptr);
    if (dq_commit(&q, 64, 0) == DQ_QUEUED) dq_pop(&q);
  }
  uint64_t lost = q.stats.dropped_loss;
  EXPECT_EQ(lost + q.stats.sent, static_cast<uint64_t>(n));
  dq_free(&q);
  return lost;
}

TEST(DelayQueueTest, LosesAtTheAskedRate) {
  const int n = 200000;
  EXPECT_EQ(Lost(0.0, 1, n), 0u);
  EXPECT_EQ(Lost(1.0, 1, n), static_cast<uint64_t>(n));
  for (double p : {0.001, 0.01, 0.1, 0.5}) {
    double got = static_cast<double>(Lost(p, 42, n)) / n;
    // Binomial: 5 standard deviations.
    EXPECT_NEAR(got, p, 5 * std::sqrt(p * (1 - p) / n)) << "loss " << p;
  }
  EXPECT_EQ(Lost(0.1, 3, 10000), Lost(0.1, 3, 10000));  // repeatable for a seed
  EXPECT_NE(Lost(0.1, 3, 10000), Lost(0.1, 4, 10000));
}

// Joins a thread however the test body ends (a failed ASSERT returns early).
struct Joined {
  std::thread t;
  ~Joined() {
    if (t.joinable()) t.join();
  }
};

// The loop over a SOCK_SEQPACKET pair (whole packets, like a TUN device): the test sends
// on one end, the router reads and writes back on the other.
class LoopTest : public ::testing::Test {
 protected:
  void Start(uint64_t delay_ns) {
    ASSERT_EQ(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, fds_), 0);
    int big = 8 << 20;
    for (int fd : fds_) {
      setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &big, sizeof(big));
      setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &big, sizeof(big));
    }
    ASSERT_EQ(fcntl(fds_[1], F_SETFL, O_NONBLOCK), 0);
    ASSERT_EQ(dq_init(&q_, 16 << 20, delay_ns, 0.0, 1), 0);
    opt_ = {fds_[1], 65536 + 256, &stop_, nullptr};
    router_ = std::thread([this] { rc_ = dl_run(&q_, &opt_, &stats_); });
  }
  void TearDown() override {
    if (router_.joinable()) {
      stop_ = 1;
      unsigned char wake = 0;  // ends the router's sleep
      ASSERT_EQ(write(fds_[0], &wake, 1), 1);
      router_.join();
      EXPECT_EQ(rc_, 0);
      dq_free(&q_);
      close(fds_[0]);
      close(fds_[1]);
    }
  }
  int fds_[2] = {-1, -1};
  dq q_;
  dl_options opt_;
  dl_stats stats_ = {0, 0};
  volatile sig_atomic_t stop_ = 0;
  int rc_ = -1;
  std::thread router_;
};

TEST_F(LoopTest, HoldsEachPacketForTheDelay) {
  const uint64_t delay = 20000000;  // 20 ms
  Start(delay);
  const int n = 40;
  std::vector<uint64_t> sent(n), late(n);
  Joined sender{std::thread([&] {
    for (int i = 0; i < n; ++i) {
      uint32_t buf[64] = {static_cast<uint32_t>(i)};
      sent[i] = dl_now_ns();
      ASSERT_EQ(write(fds_[0], buf, sizeof(buf)), static_cast<ssize_t>(sizeof(buf)));
      usleep(2000);  // several packets in flight at once
    }
  })};
  for (int i = 0; i < n; ++i) {
    uint32_t buf[64];
    ASSERT_EQ(read(fds_[0], buf, sizeof(buf)), static_cast<ssize_t>(sizeof(buf)));
    uint64_t now = dl_now_ns();
    ASSERT_EQ(buf[0], static_cast<uint32_t>(i));  // in order
    ASSERT_GE(now - sent[i], delay) << "packet " << i << " came back early";
    late[i] = now - sent[i] - delay;
  }
  sender.t.join();
  std::sort(late.begin(), late.end());
  // The median within 1 ms of the delay (a loaded machine may delay a few wake-ups).
  EXPECT_LT(late[n / 2], 1000000u) << "median lateness " << late[n / 2] / 1e6 << " ms";
  RecordProperty("median_late_us", static_cast<int>(late[n / 2] / 1000));
}

TEST_F(LoopTest, PassesABurstInOrder) {
  Start(1000000);  // 1 ms
  const int n = 20000;
  Joined sender{std::thread([&] {
    for (int i = 0; i < n; ++i) {
      uint32_t buf[16] = {static_cast<uint32_t>(i)};
      ASSERT_EQ(write(fds_[0], buf, sizeof(buf)), static_cast<ssize_t>(sizeof(buf)));
    }
  })};
  uint64_t t0 = dl_now_ns();
  for (int i = 0; i < n; ++i) {
    uint32_t buf[16];
    ASSERT_EQ(read(fds_[0], buf, sizeof(buf)), static_cast<ssize_t>(sizeof(buf)));
    // A packet the router could not write is lost (counted): say so when one is missing.
    ASSERT_EQ(buf[0], static_cast<uint32_t>(i))
        << "router write errors so far: " << stats_.write_errors;
  }
  double s = (dl_now_ns() - t0) / 1e9;
  sender.t.join();
  EXPECT_EQ(stats_.write_errors, 0u);
  std::printf("%d packets through the loop in %.3f s: %.0f packets/s (both ends on this "
              "machine, whatever its load)\n", n, s, n / s);
}

}  // namespace
