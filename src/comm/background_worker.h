// BackgroundWorker: the thread a non-blocking communicator's work runs on.
// Tasks run one at a time in submission order. The thread shares its queue
// with the worker through a shared_ptr, so an abort can leave it running
// (detached) when a task cannot be interrupted; such a task must then touch
// only what it owns.
#ifndef SIEVE_COMM_BACKGROUND_WORKER_H_
#define SIEVE_COMM_BACKGROUND_WORKER_H_

#include <functional>
#include <memory>
#include <thread>

namespace sieve {

class BackgroundWorker {
 public:
  BackgroundWorker();
  // Runs everything queued to the end, then joins the thread.
  ~BackgroundWorker();
  BackgroundWorker(const BackgroundWorker&) = delete;
  BackgroundWorker& operator=(const BackgroundWorker&) = delete;

  // Queues task; it runs after everything submitted before. A task must not
  // throw (the worker catches and logs, but its side effects are then lost).
  void Submit(std::function<void()> task);
  // Waits up to wait_s for the queue to run dry, then joins the thread (true)
  // or, when a task is still running, detaches it (false: it ends on its own).
  // Later Submits are dropped.
  bool Abandon(double wait_s);

 private:
  struct Queue;
  std::shared_ptr<Queue> queue_;
  std::thread thread_;
};

}  // namespace sieve

#endif  // SIEVE_COMM_BACKGROUND_WORKER_H_
