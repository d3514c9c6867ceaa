// The pinned staging pool: reuse only after the stream frees a slot, the cap
// (idle slots retired, released only by the reaper when no stream waits),
// keyed slots, giving up, and what is freed at the end.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "gpu/staging_pool.h"
#include "support/fake_device.h"

namespace {

using sieve::gpu::Slot;
using sieve::gpu::StagingPool;
using sieve::gpu::StoreWord;

const auto kNever = [] { return false; };

// Uses a slot as a stream would: a new generation, freed later (or now).
uint32_t Use(Slot* s) { return s->NextGen(); }
void Free(Slot* s, uint32_t gen) { StoreWord(&s->words->freed, gen); }

TEST(StagingPool, IdleSlotIsReusedBusyOneIsNot) {
  sieve_test::FakeDeviceOps ops;
  {
    StagingPool pool(&ops, 1 << 20);
    Slot* a = nullptr;
    ASSERT_TRUE(pool.Acquire(1000, nullptr, kNever, &a).ok());
    ASSERT_GE(a->capacity, 1000u);
    uint32_t g = Use(a);
    pool.Release(a);
    // Still owed by the stream: a second request gets another slot.
    Slot* b = nullptr;
    ASSERT_TRUE(pool.Acquire(500, nullptr, kNever, &b).ok());
    EXPECT_NE(a, b);
    pool.Release(b);
    // Freed: the smallest idle slot that fits is reused, nothing allocated.
    Free(a, g);
    int allocs = ops.allocs;
    Slot* c = nullptr;
    ASSERT_TRUE(pool.Acquire(900, nullptr, kNever, &c).ok());
    EXPECT_EQ(c, a);
    EXPECT_EQ(ops.allocs, allocs);
    // A leased slot is never handed out twice, even when idle on the device.
    Slot* d = nullptr;
    ASSERT_TRUE(pool.Acquire(900, nullptr, kNever, &d).ok());
    EXPECT_NE(d, c);
    pool.Release(c);
    pool.Release(d);
    EXPECT_EQ(pool.slot_count(), 3u);
  }
  EXPECT_EQ(ops.frees, ops.allocs);
}

TEST(StagingPool, CapIsHonouredByRetiringIdleSlotsTheReaperReleasesWhenQuiet) {
  sieve_test::FakeDeviceOps ops;
  StagingPool pool(&ops, 3000);
  std::atomic<int> wakes{0};
  pool.SetReaper([&] { ++wakes; });
  Slot* a = nullptr;
  ASSERT_TRUE(pool.Acquire(1000, nullptr, kNever, &a).ok());
  pool.Release(a);  // idle (never used)
  Slot* b = nullptr;
  ASSERT_TRUE(pool.Acquire(1500, nullptr, kNever, &b).ok());
  uint32_t gb = Use(b);
  pool.Release(b);  // busy
  // 2500 held; 2000 more does not fit. The idle 1000-byte slot is retired,
  // not freed by the caller (cuMemFreeHost may synchronize the device), and
  // 1500 busy + 2000 > 3000 anyway: the request waits.
  std::atomic<bool> got{false};
  Slot* c = nullptr;
  std::thread t([&] {
    sieve_test::FakeDeviceOps::ScopedContext ctx(ops);
    ASSERT_TRUE(pool.Acquire(2000, nullptr, kNever, &c).ok());
    got = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(got.load());
  EXPECT_GT(wakes.load(), 0) << "the reaper was not told";
  EXPECT_EQ(ops.frees, 0) << "the enqueuing thread freed pinned memory";
  // A stream still owes b: the device may not be synchronized now.
  EXPECT_TRUE(pool.ReapRetired());
  EXPECT_EQ(ops.frees, 0);
  Free(b, gb);
  // Quiet: the reaper (the progress thread, here the test) releases the
  // retired slots, b retired too once the waiting request saw it idle.
  for (int i = 0; i < 5000 && !got.load(); ++i) {
    pool.ReapRetired();
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  t.join();
  EXPECT_TRUE(got.load());
  EXPECT_EQ(ops.frees, 2);
  EXPECT_LE(pool.allocated_bytes(), 3000u);
  pool.Release(c);
  // Larger than the cap: a clear error, never a wait.
  Slot* d = nullptr;
  sieve::Status st = pool.Acquire(3001, nullptr, kNever, &d);
  EXPECT_EQ(st.code(), sieve::Code::kInvalidUsage);
  EXPECT_NE(st.message().find("SIEVE_GPU_STAGING_BYTES"), std::string::npos) << st.message();
}

TEST(StagingPool, KeyedSlotKeepsItsAddressAndIsWaitedFor) {
  sieve_test::FakeDeviceOps ops;
  StagingPool pool(&ops, 1 << 20);
  int buffer_a = 0, buffer_b = 0;
  Slot* a = nullptr;
  ASSERT_TRUE(pool.Acquire(4096, &buffer_a, kNever, &a).ok());
  uint32_t g = Use(a);
  pool.Release(a);
  Slot* b = nullptr;
  ASSERT_TRUE(pool.Acquire(4096, &buffer_b, kNever, &b).ok());
  EXPECT_NE(a, b);
  pool.Release(b);
  std::atomic<bool> got{false};
  Slot* again = nullptr;
  std::thread t([&] {
    sieve_test::FakeDeviceOps::ScopedContext ctx(ops);
    ASSERT_TRUE(pool.Acquire(4000, &buffer_a, kNever, &again).ok());
    got = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(got.load()) << "the keyed slot is still owed by the stream";
  Free(a, g);
  t.join();
  EXPECT_EQ(again, a);
  pool.Release(again);
}

TEST(StagingPool, GiveUpEndsTheWaitAndBusySlotsAreNotFreed) {
  sieve_test::FakeDeviceOps ops;
  {
    StagingPool pool(&ops, 1000);
    Slot* a = nullptr;
    ASSERT_TRUE(pool.Acquire(1000, nullptr, kNever, &a).ok());
    Use(a);
    pool.Release(a);
    std::atomic<int> polls{0};
    Slot* b = nullptr;
    sieve::Status st = pool.Acquire(10, nullptr, [&] { return ++polls > 100; }, &b);
    EXPECT_FALSE(st.ok());
    EXPECT_NE(st.message().find("gave up"), std::string::npos) << st.message();
  }
  // The stream still owed the slot a copy: it was leaked, not freed.
  EXPECT_EQ(ops.allocs, 1);
  EXPECT_EQ(ops.frees, 0);
}

}  // namespace
