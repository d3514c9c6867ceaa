// The background thread's queue and loop.
#include "comm/background_worker.h"

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>

#if defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif

#include "core/log.h"

namespace sieve {

struct BackgroundWorker::Queue {
  std::mutex mu;
  std::condition_variable cv;
  std::deque<std::function<void()>> tasks;
  bool running = false;  // a task has been taken and has not returned yet
  bool stop = false;     // no more tasks: the loop ends once the queue is dry
};

namespace {

void RunCaught(const std::function<void()>& task) {
  try {
    task();
  } catch (const std::exception& e) {
    SIEVE_WARN("exception in a non-blocking communicator's background task: %s", e.what());
  } catch (...) {
    SIEVE_WARN("unknown exception in a non-blocking communicator's background task");
  }
}

// The calling thread asks Linux (6.12+, EEVDF) for a short time slice: this thread
// sleeps on the network and runs briefly when data arrives, so when it wakes it may
// preempt a compute thread at once instead of waiting out that thread's slice. On a
// host with more busy threads than cores (ranks computing backward while their
// gradient buckets are exchanged) a wake-up otherwise waits several ms, and each
// ring step of the exchange waits as long. Its share of CPU is unchanged. Older
// kernels ignore the hint (or refuse it: nothing changes then).
void RequestShortSlice() {
#if defined(__linux__) && defined(SYS_sched_setattr) && defined(SYS_sched_getattr)
  struct Attr {  // struct sched_attr (SCHED_ATTR_SIZE_VER0 fields)
    uint32_t size;
    uint32_t policy;
    uint64_t flags;
    int32_t nice;
    uint32_t priority;
    uint64_t runtime;  // for SCHED_OTHER: the requested slice, in ns
    uint64_t deadline;
    uint64_t period;
  } attr{};
  constexpr uint64_t kSliceNs = 100 * 1000;  // the kernel's lower bound is 100 us
  if (syscall(SYS_sched_getattr, 0, &attr, sizeof(attr), 0) != 0) return;
  if (attr.policy != 0 /* SCHED_OTHER */) return;  // the application chose another policy
  attr.size = sizeof(attr);
  attr.runtime = kSliceNs;
  if (syscall(SYS_sched_setattr, 0, &attr, 0) != 0)
    SIEVE_INFO(kLogInit, "background thread: the kernel refused a short time slice (errno %d)",
               errno);
#endif
}

}  // namespace

BackgroundWorker::BackgroundWorker() : queue_(std::make_shared<Queue>()) {
  // The loop holds the queue, not `this`: it may outlive the worker (Abandon).
  thread_ = std::thread([queue = queue_] {
    RequestShortSlice();
    std::unique_lock<std::mutex> lock(queue->mu);
    for (;;) {
      queue->cv.wait(lock, [&] { return queue->stop || !queue->tasks.empty(); });
      if (queue->tasks.empty()) return;  // stopped and dry
      std::function<void()> task = std::move(queue->tasks.front());
      queue->tasks.pop_front();
      queue->running = true;
      lock.unlock();
      RunCaught(task);
      task = nullptr;  // what it captured goes now, not at the next wake-up
      lock.lock();
      queue->running = false;
      queue->cv.notify_all();
    }
  });
}

BackgroundWorker::~BackgroundWorker() {
  if (!thread_.joinable()) return;  // abandoned
  {
    std::lock_guard<std::mutex> lock(queue_->mu);
    queue_->stop = true;
  }
  queue_->cv.notify_all();
  thread_.join();
}

void BackgroundWorker::Submit(std::function<void()> task) {
  {
    std::lock_guard<std::mutex> lock(queue_->mu);
    if (queue_->stop) return;
    queue_->tasks.push_back(std::move(task));
  }
  queue_->cv.notify_all();
}

bool BackgroundWorker::Abandon(double wait_s) {
  if (!thread_.joinable()) return true;
  bool dry;
  {
    std::unique_lock<std::mutex> lock(queue_->mu);
    queue_->stop = true;
    queue_->cv.notify_all();
    dry = queue_->cv.wait_for(lock, std::chrono::duration<double>(wait_s),
                              [&] { return queue_->tasks.empty() && !queue_->running; });
  }
  if (dry) {
    thread_.join();
    return true;
  }
  thread_.detach();
  return false;
}

}  // namespace sieve
