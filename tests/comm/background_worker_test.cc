// The background thread of non-blocking communicators asks for a short time
// slice, so that it preempts compute threads when the network wakes it.
#include "comm/background_worker.h"

#include <gtest/gtest.h>

#include <future>
#include <thread>

#include "comm/thread_slice.h"

namespace sieve {
namespace {

// Whether this kernel keeps a slice a thread asks for (Linux 6.12+, EEVDF).
bool KernelKeepsSlices() {
  bool kept = false;
  std::thread([&] {
    kept = RequestThreadSlice(kShortSliceNs) && ThreadSliceNs() == kShortSliceNs;
  }).join();
  return kept;
}

TEST(BackgroundWorker, ThreadAsksForAShortSlice) {
  if (!KernelKeepsSlices()) GTEST_SKIP() << "this kernel has no per-thread slices";
  uint64_t default_slice = 0;
  std::thread([&] { default_slice = ThreadSliceNs(); }).join();
  ASSERT_NE(default_slice, kShortSliceNs) << "a new thread already has the short slice";
  BackgroundWorker worker;
  std::promise<uint64_t> slice;
  worker.Submit([&] { slice.set_value(ThreadSliceNs()); });
  EXPECT_EQ(slice.get_future().get(), kShortSliceNs);
}

}  // namespace
}  // namespace sieve
