// The background thread's queue and loop.
#include "comm/background_worker.h"

#include <chrono>
#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>

#include "comm/thread_slice.h"
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

}  // namespace

BackgroundWorker::BackgroundWorker() : queue_(std::make_shared<Queue>()) {
  // The loop holds the queue, not `this`: it may outlive the worker (Abandon).
  thread_ = std::thread([queue = queue_] {
    // This thread sleeps on the network and runs briefly when woken: with more busy threads
    // than cores (ranks computing backward while their buckets are exchanged) it would
    // otherwise wait out a computing thread's slice at every wake-up, every ring step.
    // Threads it creates (the transport's) inherit the slice.
    if (!RequestThreadSlice(kShortSliceNs))
      SIEVE_INFO(kLogInit, "background thread: no short time slice (policy or kernel)");
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
