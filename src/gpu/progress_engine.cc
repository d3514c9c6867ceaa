// Progress engine: stream-side enqueue of staged operations and the progress
// thread that runs their network part.
#include "gpu/progress_engine.h"

#include <algorithm>
#include <chrono>
#include <exception>
#include <future>

#include "core/log.h"
#include "gpu/stream_plan.h"
#include "gpu/thread_role.h"

namespace sieve::gpu {

namespace {

// No exception may leave the progress thread (it would end the process).
Status RunCaught(const std::function<Status(char*)>& run, char* staging) {
  try {
    return run(staging);
  } catch (const std::exception& e) {
    return Status::Internal(StrFormat("exception in a device collective: %s", e.what()));
  } catch (...) {
    return Status::Internal("unknown exception in a device collective");
  }
}

// Waiting for the device: spin briefly (the common case is a few microseconds
// away), then yield, then sleep so an idle stream costs no CPU.
void Backoff(int* spins) {
  if (++*spins < 200) return;
  if (*spins < 2000)
    std::this_thread::yield();
  else
    std::this_thread::sleep_for(std::chrono::microseconds(20));
}

}  // namespace

ProgressEngine::ProgressEngine(DeviceOps* ops, Options options)
    : ops_(ops),
      options_(std::move(options)),
      pool_(ops, options_.staging_cap, options_.numa, options_.placer),
      streams_(ops) {
  pool_.SetReaper([this] { WakeReaper(); });
  thread_ = std::thread([this] {
    MarkFlagWriterThread();  // it writes the `done` words parked streams wait for
    // The communicator's context, for its device work (the direct path) and
    // for releasing staging (one communicator, one device).
    if (options_.context != nullptr) {
      Status st = ops_->PushContext(options_.context);
      if (!st.ok()) SIEVE_WARN("progress thread: %s", st.message().c_str());
    }
    // Near the NIC (and GPU) whose traffic this thread drives; the
    // communicator works the same when binding is refused.
    NumaPlacer* placer = options_.placer != nullptr ? options_.placer : DefaultNumaPlacer();
    std::string binding = BindProgressThread(placer, options_.numa);
    SIEVE_INFO(kLogInit, "progress thread: %s", binding.c_str());
    {
      std::lock_guard<std::mutex> lock(mu_);
      thread_binding_ = std::move(binding);
    }
    Loop();
    if (options_.context != nullptr) {
      Status st = ops_->PopContext();
      if (!st.ok()) SIEVE_WARN("progress thread: %s", st.message().c_str());
    }
  });
}

std::string ProgressEngine::thread_binding() const {
  std::lock_guard<std::mutex> lock(mu_);
  return thread_binding_;
}

ProgressEngine::~ProgressEngine() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
  // The streams still copy results out of the slots: let them finish before
  // the pool frees the memory (the pool leaks what is still owed after this).
  auto deadline = std::chrono::steady_clock::now() +
                  std::chrono::duration<double>(Stopping() ? 1.0 : options_.drain_timeout_s);
  while (!pool_.AllIdle() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  // The members' teardown (pinned staging, the engine's streams) in the
  // communicator's context, whichever thread destroys it.
  if (options_.context != nullptr && ops_->PushContext(options_.context).ok()) {
    pool_.ReleaseAll();
    streams_.Release();
    Status popped = ops_->PopContext();
    if (!popped.ok()) SIEVE_WARN("progress engine teardown: %s", popped.message().c_str());
  }
}

void ProgressEngine::WakeReaper() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    reap_ = true;
  }
  cv_.notify_all();
}

bool ProgressEngine::Stopping() const {
  return options_.abort != nullptr && options_.abort->load();
}

void ProgressEngine::Push(Task task) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back(std::move(task));
  }
  cv_.notify_one();
}

void ProgressEngine::Loop() {
  for (;;) {
    Task task;
    {
      std::unique_lock<std::mutex> lock(mu_);
      // Retired staging is released only here, between tasks, and only
      // while no stream waits on this thread (StagingPool::ReapRetired):
      // cuMemFreeHost may synchronize the device. Until then, poll.
      while (reap_ && queue_.empty() && !stop_) {
        lock.unlock();
        const bool pending = pool_.ReapRetired();
        lock.lock();
        if (!pending) {
          reap_ = false;
          break;
        }
        cv_.wait_for(lock, std::chrono::milliseconds(1));
      }
      cv_.wait(lock, [this] { return stop_ || !queue_.empty() || reap_; });
      if (queue_.empty() && reap_ && !stop_) continue;
      if (queue_.empty()) return;  // stop_ and drained
      task = std::move(queue_.front());
      queue_.pop_front();
    }
    if (task.host) {
      task.host();
      continue;
    }
    bool op_failed = false;
    for (ChunkTask& c : task.chunks) RunChunk(c, &op_failed);
  }
}

void ProgressEngine::RunChunk(ChunkTask& c, bool* op_failed) {
  // Wait until the stream has staged this chunk. No timeout: the stream may
  // legitimately be behind long kernels. An abort, or an earlier failure of
  // the same operation, skips the chunk.
  int spins = 0;
  auto stop_since = std::chrono::steady_clock::time_point{};
  while (!*op_failed && !Reached(LoadWord(&c.slot->words->ready), c.gen)) {
    if (Stopping()) {
      *op_failed = true;
      break;
    }
    bool stopping;
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopping = stop_;
    }
    if (stopping) {  // destroying: a stream that never gets here must not hang us
      auto now = std::chrono::steady_clock::now();
      if (stop_since == decltype(stop_since){}) stop_since = now;
      if (now - stop_since > std::chrono::duration<double>(options_.drain_timeout_s)) {
        SIEVE_WARN("communicator destroyed while a stream had not reached a device collective "
                   "for %.0f s; releasing the stream without running it",
                   options_.drain_timeout_s);
        *op_failed = true;
        break;
      }
    }
    Backoff(&spins);
  }
  if (!*op_failed) {
    Status st = RunCaught(c.run, c.slot->data);
    if (!st.ok()) {
      *op_failed = true;
      if (options_.on_async_error) options_.on_async_error(st);
    }
  }
  // Always release the stream, even after a failure (outputs are then undefined).
  StoreWord(&c.slot->words->done, c.gen);
}

Status ProgressEngine::RunHost(std::function<Status()> fn) {
  if (std::this_thread::get_id() == thread_.get_id()) return fn();
  std::promise<Status> done;
  std::future<Status> result = done.get_future();
  Task task;
  task.host = [&fn, &done] {
    try {
      done.set_value(fn());
    } catch (const std::exception& e) {
      done.set_value(Status::Internal(StrFormat("exception: %s", e.what())));
    } catch (...) {
      done.set_value(Status::Internal("unknown exception"));
    }
  };
  Push(std::move(task));
  return result.get();
}

Status ProgressEngine::AcquireSlots(const StagedOp& op, std::vector<Slot*>* slots) {
  size_t k = std::max<size_t>(1, std::min(op.depth, op.chunks.size()));
  if (options_.sync) k = 1;  // the caller waits at each step: nothing to overlap
  size_t bytes = 0;
  for (const StagedChunk& c : op.chunks) bytes = std::max(bytes, c.bytes);
  // The first slot is waited for; more are taken only if available at once
  // (a pipeline shallower than asked beats waiting on our own slots forever).
  std::function<bool()> give_up = [this] { return Stopping(); };
  std::function<bool()> dont_wait = [] { return true; };
  for (size_t i = 0; i < k; ++i) {
    Slot* slot = nullptr;
    Status st = pool_.Acquire(bytes, k == 1 ? op.key : nullptr, i == 0 ? give_up : dont_wait,
                              &slot);
    if (!st.ok()) {
      if (i > 0) break;
      return st;
    }
    slots->push_back(slot);
  }
  return Status::OK();
}

Status ProgressEngine::Enqueue(StagedOp op) {
  if (op.chunks.empty()) return Status::OK();
  return options_.sync ? EnqueueSync(op) : EnqueueAsync(op);
}

Status ProgressEngine::EnqueueAsync(StagedOp& op) {
  std::vector<Slot*> slots;
  SIEVE_RETURN_IF_ERROR(AcquireSlots(op, &slots));
  std::vector<uint32_t> gen(op.chunks.size(), 0);
  std::vector<bool> freed(slots.size(), false);
  Status st;
  for (const StreamStep& step : PlanStream(op.chunks.size(), slots.size())) {
    Slot* s = slots[step.slot];
    const StagedChunk& chunk = op.chunks[step.chunk];
    switch (step.kind) {
      case StreamStepKind::kCopyIn:
        gen[step.chunk] = s->NextGen();
        for (const StagedCopy& c : chunk.in)
          if (st.ok()) st = ops_->CopyToHost(s->data + c.offset, c.device, c.bytes, op.stream);
        break;
      case StreamStepKind::kSignalReady:
        st = ops_->WriteFlag(op.stream, &s->words->ready, gen[step.chunk]);
        break;
      case StreamStepKind::kWaitDone:
        st = ops_->WaitFlag(op.stream, &s->words->done, gen[step.chunk]);
        break;
      case StreamStepKind::kCopyOut:
        for (const StagedCopy& c : chunk.out)
          if (st.ok()) st = ops_->CopyToDevice(c.device, s->data + c.offset, c.bytes, op.stream);
        break;
      case StreamStepKind::kSignalFreed:
        st = ops_->WriteFlag(op.stream, &s->words->freed, gen[step.chunk]);
        freed[step.slot] = st.ok();
        break;
    }
    if (!st.ok()) break;
  }
  if (!st.ok()) {
    // The stream holds part of the operation: release every wait it may hold
    // and leave the network part out (peers fail on it within their timeout).
    // A slot whose `freed` write was not enqueued stays owed and is not reused.
    for (size_t i = 0; i < slots.size(); ++i) {
      StoreWord(&slots[i]->words->done, slots[i]->gen);
      slots[i]->abandoned = !freed[i];
      pool_.Release(slots[i]);
    }
    st = st.WithContext(StrFormat("%s on device buffers: ", op.name));
    if (options_.on_async_error) options_.on_async_error(st);
    return st;
  }
  Task task;
  for (size_t i = 0; i < op.chunks.size(); ++i)
    task.chunks.push_back({slots[i % slots.size()], gen[i], std::move(op.chunks[i].run)});
  for (Slot* s : slots) pool_.Release(s);
  Push(std::move(task));
  return Status::OK();
}

Status ProgressEngine::EnqueueSync(StagedOp& op) {
  std::vector<Slot*> slots;
  SIEVE_RETURN_IF_ERROR(AcquireSlots(op, &slots));
  Slot* s = slots[0];
  Status st;
  for (StagedChunk& chunk : op.chunks) {
    for (const StagedCopy& c : chunk.in)
      if (st.ok()) st = ops_->CopyToHost(s->data + c.offset, c.device, c.bytes, op.stream);
    if (st.ok()) st = ops_->Synchronize(op.stream);
    if (st.ok()) st = RunHost([&chunk, s] { return RunCaught(chunk.run, s->data); });
    for (const StagedCopy& c : chunk.out)
      if (st.ok()) st = ops_->CopyToDevice(c.device, s->data + c.offset, c.bytes, op.stream);
    // The slot is reused by the next chunk: its copy-out must be finished.
    if (st.ok()) st = ops_->Synchronize(op.stream);
    if (!st.ok()) break;
  }
  pool_.Release(s);
  return st;
}

}  // namespace sieve::gpu
