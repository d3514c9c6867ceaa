// The background thread of non-blocking communicators asks for a short time
// slice, so that it preempts compute threads when the network wakes it.
#include "comm/background_worker.h"

#include <gtest/gtest.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdint>
#include <future>
#include <thread>

namespace sieve {
namespace {

struct Attr {  // struct sched_attr, SCHED_ATTR_SIZE_VER0
  uint32_t size;
  uint32_t policy;
  uint64_t flags;
  int32_t nice;
  uint32_t priority;
  uint64_t runtime;
  uint64_t deadline;
  uint64_t period;
};

// The calling thread's slice as the kernel reports it (0: none reported).
uint64_t MySlice() {
  Attr a{};
  if (syscall(SYS_sched_getattr, 0, &a, sizeof(a), 0) != 0) return 0;
  return a.runtime;
}

// Whether the kernel keeps a slice a thread asks for (Linux 6.12+, EEVDF).
bool KernelKeepsSlices(uint64_t ns) {
  uint64_t got = 0;
  std::thread probe([&] {
    Attr a{};
    if (syscall(SYS_sched_getattr, 0, &a, sizeof(a), 0) != 0) return;
    a.size = sizeof(a);
    a.runtime = ns;
    if (syscall(SYS_sched_setattr, 0, &a, 0) == 0) got = MySlice();
  });
  probe.join();
  return got == ns;
}

TEST(BackgroundWorker, ThreadAsksForAShortSlice) {
  constexpr uint64_t kSliceNs = 100 * 1000;
  if (!KernelKeepsSlices(kSliceNs)) GTEST_SKIP() << "this kernel has no per-thread slices";
  uint64_t default_slice = 0;
  std::thread([&] { default_slice = MySlice(); }).join();
  ASSERT_NE(default_slice, kSliceNs) << "a new thread already has the short slice";
  BackgroundWorker worker;
  std::promise<uint64_t> slice;
  worker.Submit([&] { slice.set_value(MySlice()); });
  EXPECT_EQ(slice.get_future().get(), kSliceNs);
}

}  // namespace
}  // namespace sieve
