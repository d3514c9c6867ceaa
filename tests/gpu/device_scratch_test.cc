// The direct path's scratch cache: the caller's thread reserves every block a
// collective will ask for; the progress thread only lends them, never
// allocating or freeing (either may synchronize the device while the
// caller's stream is parked on that thread); blocks are reused from call to
// call, too-small ones released only while nothing is queued, and all go
// when the cache does.
#include <gtest/gtest.h>

#include <cstring>
#include <thread>

#include "gpu/device_scratch.h"
#include "gpu/thread_role.h"
#include "support/fake_device.h"

namespace {

using sieve::gpu::DeviceScratch;

TEST(DeviceScratch, ReservedBlocksAreLentAndReusedForAnySmallerRequest) {
  sieve_test::FakeDeviceOps ops;
  {
    DeviceScratch scratch(&ops);
    ASSERT_TRUE(scratch.Reserve({4096, 1000}).ok());
    EXPECT_EQ(scratch.blocks(), 2u);
    void *a = nullptr, *b = nullptr;
    ASSERT_TRUE(scratch.Allocate(4096, &a).ok());
    std::memset(a, 1, 4096);  // the whole block is usable
    ASSERT_TRUE(scratch.Allocate(1000, &b).ok());
    EXPECT_NE(a, b);
    // Nothing more was reserved: a third request is an error, not an allocation.
    void* c = nullptr;
    sieve::Status st = scratch.Allocate(10, &c);
    EXPECT_EQ(st.code(), sieve::Code::kInternalError);
    EXPECT_NE(st.message().find("did not reserve"), std::string::npos) << st.message();
    scratch.Free(a);
    scratch.Free(b);
    scratch.Done();
    // The same plan again: no new block.
    ASSERT_TRUE(scratch.Reserve({1000, 4096}).ok());
    EXPECT_EQ(scratch.blocks(), 2u);
    EXPECT_EQ(ops.device_live(), 2u);
    scratch.Done();
  }
  EXPECT_EQ(ops.device_live(), 0u);  // the destructor released both
}

TEST(DeviceScratch, GrowingReleasesTooSmallBlocksOnlyWhenNothingIsQueued) {
  sieve_test::FakeDeviceOps ops;
  DeviceScratch scratch(&ops);
  ASSERT_TRUE(scratch.Reserve({100, 200}).ok());  // queued: one collective
  // Another collective queued behind it needs more: blocks are added, none
  // released (the first may be using them on the progress thread).
  ASSERT_TRUE(scratch.Reserve({10000}).ok());
  EXPECT_EQ(scratch.blocks(), 3u);
  scratch.Done();
  scratch.Done();
  // Nothing queued: a larger plan releases the too-small free blocks first.
  ASSERT_TRUE(scratch.Reserve({20000, 50}).ok());
  EXPECT_EQ(scratch.blocks(), 2u);  // 20000 new, 10000 kept for the 50
  EXPECT_EQ(ops.device_live(), 2u);
  void *big = nullptr, *small = nullptr;
  ASSERT_TRUE(scratch.Allocate(20000, &big).ok());
  ASSERT_TRUE(scratch.Allocate(50, &small).ok());
  std::memset(big, 3, 20000);
  scratch.Free(big);
  scratch.Free(small);
  scratch.Done();
}

// What the progress thread does (Allocate/Free) makes no driver call, so
// nothing there can synchronize the device under a parked stream; the fake
// reports a block allocated or freed on a progress thread while one is parked.
TEST(DeviceScratch, TheProgressThreadOnlyLends) {
  sieve_test::FakeDeviceOps ops;
  DeviceScratch scratch(&ops);
  ASSERT_TRUE(scratch.Reserve({4096}).ok());
  sieve_test::FakeStream caller;
  uint32_t done = 0;
  caller.PushWait(&done, 1);  // parked until the "progress thread" signals
  std::thread progress([&] {
    sieve::gpu::MarkFlagWriterThread();
    sieve_test::FakeDeviceOps::ScopedContext ctx(ops);
    void* p = nullptr;
    EXPECT_TRUE(scratch.Allocate(4096, &p).ok());
    scratch.Free(p);
    // The pattern this design removes: a plain allocation here.
    void* q = nullptr;
    EXPECT_FALSE(ops.AllocDeviceBlock(64, &q).ok());
    sieve::gpu::StoreWord(&done, 1);
  });
  progress.join();
  caller.Drain();
  std::vector<std::string> v = ops.TakeViolations();
  ASSERT_EQ(v.size(), 1u);
  EXPECT_NE(v[0].find("deadlock: cuMemAlloc"), std::string::npos) << v[0];
  scratch.Done();
}

}  // namespace
