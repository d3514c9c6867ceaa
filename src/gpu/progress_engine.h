// The progress engine of one communicator with device buffers: enqueues
// staged operations on the caller's stream and runs their network part on its
// own thread, in submission order (so every rank issues the same sequence).
//
// Handshake, per chunk (see stream_plan.h): the stream copies the inputs into
// a pinned slot and writes the chunk's generation into the slot's `ready`
// word; the progress thread sees it, runs the host part, and writes `done`;
// the stream, which was told to wait for `done` (cuStreamWaitValue32), then
// copies the outputs back and, at the slot's last use, writes `freed`. The
// caller's thread only enqueues: it never waits for the device or the network.
// With `sync` (SIEVE_GPU_SYNC=1, or a driver without stream memory operations)
// the caller's thread instead waits at each step (cuStreamSynchronize).
#ifndef SIEVE_GPU_PROGRESS_ENGINE_H_
#define SIEVE_GPU_PROGRESS_ENGINE_H_

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "comm/work_queue.h"
#include "gpu/device_ops.h"
#include "gpu/engine_streams.h"
#include "gpu/numa_placer.h"
#include "gpu/staged_op.h"
#include "gpu/staging_pool.h"

namespace sieve::gpu {

class ProgressEngine : public WorkQueue {
 public:
  struct Options {
    bool sync = false;
    size_t staging_cap = size_t{1} << 30;
    // While destroying: how long a stream that never reaches a queued
    // operation is waited for before the operation is dropped.
    double drain_timeout_s = 60;
    // Set when the communicator is aborted: waits end, streams are released.
    const std::atomic<bool>* abort = nullptr;
    // A failure of an operation whose call already returned (the network part
    // failed): recorded on the communicator, as NCCL's async error.
    std::function<void(const Status&)> on_async_error;
    // The communicator's NUMA node (-1: none): the progress thread binds to
    // its CPUs when it starts, and staging memory is placed on it, where the
    // machine has several nodes. `placer` nullptr: the hwloc one.
    int numa = -1;
    NumaPlacer* placer = nullptr;
    // The CUDA context of the communicator's device work (nullptr: none, in
    // tests): current on the progress thread for its life, and around the
    // engine's teardown.
    cu::Context context = nullptr;
    int device = 0;  // that context's device ordinal
  };

  ProgressEngine(DeviceOps* ops, Options options);
  // Runs what is queued to the end (the streams are waiting on it), then stops.
  ~ProgressEngine();

  // Enqueues `op` on op.stream and returns; the stream's later work sees the
  // result. Errors returned here are the enqueue's own; network errors arrive
  // through on_async_error. In sync mode returns when the op is complete.
  Status Enqueue(StagedOp op);
  // Runs `fn` on the progress thread after everything submitted before and
  // returns its status: the communicator's order for its calls on host buffers
  // (comm/work_queue.h), and the staged chunks' host part.
  Status RunHost(std::function<Status()> fn) override;

  bool sync() const { return options_.sync; }
  cu::Context context() const { return options_.context; }
  int device() const { return options_.device; }
  StagingPool& pool() { return pool_; }
  // The progress thread's own streams (the direct path's kernels).
  EngineStreams& streams() { return streams_; }
  // What the progress thread's start did about its CPU binding, in words
  // ("" until the thread has started; RunHost returns after that).
  std::string thread_binding() const;

 private:
  struct ChunkTask {
    Slot* slot;
    uint32_t gen;
    std::function<Status(char*)> run;
  };
  struct Task {
    std::vector<ChunkTask> chunks;  // a staged op (async)
    std::function<void()> host;     // or a host function
  };

  Status EnqueueAsync(StagedOp& op);
  Status EnqueueSync(StagedOp& op);
  Status AcquireSlots(const StagedOp& op, std::vector<Slot*>* slots);
  void Push(Task task);
  void Loop();
  void RunChunk(ChunkTask& c, bool* op_failed);
  // Wakes the thread to release retired staging at its next quiet point.
  void WakeReaper();
  bool Stopping() const;

  DeviceOps* ops_;
  Options options_;
  StagingPool pool_;
  EngineStreams streams_;  // used by the thread only; destroyed after it stopped
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Task> queue_;
  bool stop_ = false;
  bool reap_ = false;  // the pool retired slots: release them when quiet
  std::string thread_binding_;  // guarded by mu_
  std::thread thread_;
};

}  // namespace sieve::gpu

#endif  // SIEVE_GPU_PROGRESS_ENGINE_H_
