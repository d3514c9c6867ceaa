// The direct path's scratch cache: blocks are reused from call to call, grow
// by releasing the too-small free ones, and all go when the cache does.
#include <gtest/gtest.h>

#include <cstring>

#include "gpu/device_scratch.h"
#include "support/fake_device.h"

namespace {

using sieve::gpu::DeviceScratch;

TEST(DeviceScratch, FreedBlockIsReusedForAnySmallerRequest) {
  sieve_test::FakeDeviceOps ops;
  {
    DeviceScratch scratch(&ops);
    void* a = nullptr;
    ASSERT_TRUE(scratch.Allocate(4096, &a).ok());
    std::memset(a, 1, 4096);  // the whole block is usable
    scratch.Free(a);
    void* b = nullptr;
    ASSERT_TRUE(scratch.Allocate(1000, &b).ok());
    EXPECT_EQ(a, b);
    EXPECT_EQ(scratch.blocks(), 1u);
    EXPECT_EQ(ops.device_live(), 1u);
    // In use: a second request gets a second block.
    void* c = nullptr;
    ASSERT_TRUE(scratch.Allocate(1000, &c).ok());
    EXPECT_NE(c, b);
    EXPECT_EQ(ops.device_live(), 2u);
    scratch.Free(b);
    scratch.Free(c);
  }
  EXPECT_EQ(ops.device_live(), 0u);  // the destructor released both
}

TEST(DeviceScratch, GrowingReleasesOnlyTheFreeBlocksThatAreTooSmall) {
  sieve_test::FakeDeviceOps ops;
  DeviceScratch scratch(&ops);
  void *small = nullptr, *busy = nullptr, *big = nullptr;
  ASSERT_TRUE(scratch.Allocate(100, &small).ok());
  ASSERT_TRUE(scratch.Allocate(200, &busy).ok());
  scratch.Free(small);
  ASSERT_TRUE(scratch.Allocate(10000, &big).ok());
  // `small` was released, `busy` (still in use) was not.
  EXPECT_EQ(scratch.blocks(), 2u);
  EXPECT_EQ(ops.device_live(), 2u);
  std::memset(busy, 2, 200);
  std::memset(big, 3, 10000);
  scratch.Free(busy);
  scratch.Free(big);
  void* again = nullptr;
  ASSERT_TRUE(scratch.Allocate(5000, &again).ok());
  EXPECT_EQ(again, big);  // the smallest free block that fits
}

}  // namespace
