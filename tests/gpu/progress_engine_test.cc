// The progress engine over a fake device: stream semantics (the call returns
// before the work is done, later stream work sees the result), pipelining over
// reused slots, the blocking path, errors, abort and destruction.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <random>
#include <thread>

#include "gpu/progress_engine.h"
#include "support/fake_device.h"
#include "support/staged_transform.h"

namespace {

using sieve::Status;
using sieve::gpu::ProgressEngine;
using sieve::gpu::StagedOp;
using sieve_test::ExpectTransformed;
using sieve_test::RandomWords;
using sieve_test::Transform;

ProgressEngine::Options Opts(sieve_test::FakeDeviceOps& ops, std::atomic<bool>* abort = nullptr,
                             std::vector<Status>* errors = nullptr) {
  ProgressEngine::Options o;
  o.context = ops.ContextOf(0);
  o.staging_cap = 64 << 20;
  o.abort = abort;
  o.drain_timeout_s = 2;
  if (errors) o.on_async_error = [errors](const Status& st) { errors->push_back(st); };
  return o;
}

TEST(ProgressEngine, ReturnsBeforeTheStreamRunsAndLaterStreamWorkSeesTheResult) {
  sieve_test::FakeDeviceOps ops;
  sieve_test::FakeStream stream;
  ProgressEngine engine(&ops, Opts(ops));
  std::vector<uint32_t> in = RandomWords(1001, 1), out(1001, 0), after(1001, 0);
  std::atomic<int> runs{0};
  stream.Pause(true);  // the GPU is busy with earlier kernels
  ASSERT_TRUE(engine.Enqueue(Transform(stream.handle(), in.data(), out.data(), in.size(), 97, 3,
                                       &runs)).ok());
  // A "kernel" enqueued after the collective reads its output.
  stream.Push([&] {
    std::memcpy(after.data(), out.data(), out.size() * 4);
    return true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  EXPECT_EQ(runs.load(), 0) << "the progress thread ran before the stream staged the input";
  EXPECT_EQ(out[0], 0u);
  stream.Pause(false);
  stream.Drain();
  EXPECT_EQ(runs.load(), 11);
  ExpectTransformed(in, out);
  ExpectTransformed(in, after);
}

TEST(ProgressEngine, CallerIsNotBlockedWhileTheNetworkPartIsSlow) {
  sieve_test::FakeDeviceOps ops;
  sieve_test::FakeStream stream;
  ProgressEngine engine(&ops, Opts(ops));
  std::vector<uint32_t> in = RandomWords(64, 2), out(64, 0);
  std::atomic<bool> release{false};
  auto t0 = std::chrono::steady_clock::now();
  ASSERT_TRUE(engine.Enqueue(Transform(stream.handle(), in.data(), out.data(), 64, 64, 1, nullptr,
                                       [&] { while (!release) std::this_thread::yield(); }))
                  .ok());
  double enqueue_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_LT(enqueue_s, 5.0);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_GT(stream.pending(), 0u) << "the stream must wait for the progress thread";
  release = true;
  stream.Drain();
  ExpectTransformed(in, out);
}

TEST(ProgressEngine, PipelinesManyChunksOverFewSlotsAcrossOpsAndStreams) {
  sieve_test::FakeDeviceOps ops;
  sieve_test::FakeStream s1, s2;
  ProgressEngine::Options o = Opts(ops);
  o.staging_cap = 16 << 10;  // ~6 slots of the largest chunk: slots must be reused
  ProgressEngine engine(&ops, o);
  std::mt19937 rng(3);
  std::vector<std::vector<uint32_t>> ins, outs;
  std::vector<sieve_test::FakeStream*> used;
  for (int op = 0; op < 24; ++op) {
    size_t n = 1 + rng() % 5000, chunk = 1 + rng() % 700, depth = 1 + rng() % 4;
    ins.push_back(RandomWords(n, 100 + op));
    outs.emplace_back(n, 0);
    sieve_test::FakeStream* s = (rng() & 1) ? &s1 : &s2;
    ASSERT_TRUE(engine.Enqueue(Transform(s->handle(), ins.back().data(), outs.back().data(), n,
                                         chunk, depth)).ok());
  }
  s1.Drain();
  s2.Drain();
  for (size_t i = 0; i < ins.size(); ++i) ExpectTransformed(ins[i], outs[i]);
  // Slots were reused within the cap, not allocated per chunk.
  EXPECT_LE(engine.pool().allocated_bytes(), size_t{16} << 10);
  EXPECT_GT(ops.flag_ops.load(), 0);
}

// Staging too small for a new op under the cap is retired by the enqueuing
// thread and released by the progress thread, never by the caller (whose
// cuMemFreeHost could synchronize the device) and never while a stream is
// parked on the progress thread (the fake reports that as a deadlock).
TEST(ProgressEngine, RetiredStagingIsReleasedByTheProgressThreadWhenNoStreamWaits) {
  sieve_test::FakeDeviceOps ops;
  sieve_test::FakeStream s1, s2;
  ProgressEngine::Options o = Opts(ops);
  o.staging_cap = 12000;
  ProgressEngine engine(&ops, o);
  std::vector<uint32_t> small_in = RandomWords(1000, 7), small_out(1000, 0);
  ASSERT_TRUE(engine.Enqueue(Transform(s1.handle(), small_in.data(), small_out.data(), 1000,
                                       1000, 1)).ok());
  s1.Drain();  // a 4000-byte slot, idle now
  // An op whose network part is held: s1 stays parked on the progress thread.
  std::atomic<bool> release{false};
  std::vector<uint32_t> held_in = RandomWords(1500, 8), held_out(1500, 0);
  ASSERT_TRUE(engine.Enqueue(Transform(s1.handle(), held_in.data(), held_out.data(), 1500, 1500, 1,
                                       nullptr, [&] { while (!release) std::this_thread::yield(); }))
                  .ok());
  // 8000 more bytes do not fit beside 4000 + 6000: the idle 4000-byte slot is
  // retired, and the caller waits for room.
  std::vector<uint32_t> big_in = RandomWords(2000, 9), big_out(2000, 0);
  std::atomic<bool> enqueued{false};
  std::thread caller([&] {
    sieve_test::FakeDeviceOps::ScopedContext ctx(ops);
    ASSERT_TRUE(engine.Enqueue(Transform(s2.handle(), big_in.data(), big_out.data(), 2000, 2000,
                                         1)).ok());
    enqueued = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(enqueued.load());
  EXPECT_EQ(ops.frees, 0) << "pinned memory freed while a stream waits on the progress thread, "
                             "or by the enqueuing thread";
  release = true;
  caller.join();
  s1.Drain();
  s2.Drain();
  ExpectTransformed(held_in, held_out);
  ExpectTransformed(big_in, big_out);
  EXPECT_GE(ops.frees, 1);  // the held op's slot may have retired too, once idle
  EXPECT_LE(engine.pool().allocated_bytes(), 12000u);
  EXPECT_TRUE(ops.TakeViolations().empty());
}

TEST(ProgressEngine, GenerationsWrapAround) {
  sieve_test::FakeDeviceOps ops;
  sieve_test::FakeStream stream;
  ProgressEngine engine(&ops, Opts(ops));
  // Park one slot just below 2^32 so its generations wrap during the op.
  sieve::gpu::Slot* s = nullptr;
  ASSERT_TRUE(engine.pool().Acquire(4 * 50, nullptr, [] { return false; }, &s).ok());
  s->gen = 0xfffffffdu;
  for (uint32_t* w : {&s->words->ready, &s->words->done, &s->words->freed})
    sieve::gpu::StoreWord(w, s->gen.load());
  engine.pool().Release(s);
  std::vector<uint32_t> in = RandomWords(500, 4), out(500, 0);
  ASSERT_TRUE(engine.Enqueue(Transform(stream.handle(), in.data(), out.data(), 500, 50, 1)).ok());
  stream.Drain();
  ExpectTransformed(in, out);
  EXPECT_LT(s->gen.load(), 10u);  // wrapped
}

TEST(ProgressEngine, BlockingPathCompletesBeforeReturningWithoutFlags) {
  sieve_test::FakeDeviceOps ops;
  sieve_test::FakeStream stream;
  ProgressEngine::Options o = Opts(ops);
  o.sync = true;
  ProgressEngine engine(&ops, o);
  std::vector<uint32_t> in = RandomWords(3333, 5), out(3333, 0);
  ASSERT_TRUE(engine.Enqueue(Transform(stream.handle(), in.data(), out.data(), 3333, 1000, 4)).ok());
  ExpectTransformed(in, out);  // no Drain: the call itself waited
  EXPECT_EQ(ops.flag_ops.load(), 0);
  EXPECT_GE(ops.syncs.load(), 8);
}

TEST(ProgressEngine, NetworkFailureIsAsyncReleasesTheStreamAndSkipsTheRestOfTheOp) {
  sieve_test::FakeDeviceOps ops;
  sieve_test::FakeStream stream;
  std::vector<Status> errors;
  ProgressEngine engine(&ops, Opts(ops, nullptr, &errors));
  std::vector<uint32_t> in = RandomWords(400, 6), out(400, 0);
  std::atomic<int> runs{0};
  StagedOp op = Transform(stream.handle(), in.data(), out.data(), 400, 100, 2, &runs);
  op.chunks[1].run = [](char*) { return Status::RemoteError("rank 1 left (allreduce #4)"); };
  ASSERT_TRUE(engine.Enqueue(std::move(op)).ok());
  stream.Drain();  // would hang if a failed chunk kept the stream waiting
  EXPECT_EQ(runs.load(), 1);  // chunk 0 only; 2 and 3 skipped
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_NE(errors[0].message().find("rank 1 left"), std::string::npos);
  // The engine still serves later operations.
  std::vector<uint32_t> out2(400, 0);
  ASSERT_TRUE(engine.Enqueue(Transform(stream.handle(), in.data(), out2.data(), 400, 100, 2)).ok());
  stream.Drain();
  ExpectTransformed(in, out2);
}

TEST(ProgressEngine, EnqueueFailureIsReportedAndLeavesNoStreamWaiting) {
  sieve_test::FakeDeviceOps ops;
  sieve_test::FakeStream stream;
  std::vector<Status> errors;
  ProgressEngine engine(&ops, Opts(ops, nullptr, &errors));
  std::vector<uint32_t> in = RandomWords(600, 7), out(600, 0);
  ops.fail_copy_in_after = 4;  // the 4th chunk's copy fails to enqueue
  Status st = engine.Enqueue(Transform(stream.handle(), in.data(), out.data(), 600, 100, 3));
  EXPECT_EQ(st.code(), sieve::Code::kCudaError);
  EXPECT_NE(st.message().find("transform on device buffers"), std::string::npos) << st.message();
  EXPECT_EQ(errors.size(), 1u);
  stream.Drain();  // no wait left hanging on the stream
}

TEST(ProgressEngine, HostCallsRunInOrderWithDeviceWork) {
  sieve_test::FakeDeviceOps ops;
  sieve_test::FakeStream stream;
  ProgressEngine engine(&ops, Opts(ops));
  std::vector<uint32_t> in = RandomWords(256, 8), out(256, 0);
  std::atomic<int> runs{0};
  ASSERT_TRUE(engine.Enqueue(Transform(stream.handle(), in.data(), out.data(), 256, 32, 2, &runs))
                  .ok());
  int seen = -1;
  ASSERT_TRUE(engine.RunHost([&] {
    seen = runs.load();
    return Status::OK();
  }).ok());
  EXPECT_EQ(seen, 8) << "a host call must run after the device work queued before it";
  Status st = engine.RunHost([] { return Status::InvalidArgument("bad"); });
  EXPECT_EQ(st.code(), sieve::Code::kInvalidArgument);
  stream.Drain();  // the copies out still target `out`
  ExpectTransformed(in, out);
}

TEST(ProgressEngine, AbortReleasesAStreamThatNeverArrives) {
  sieve_test::FakeDeviceOps ops;
  std::vector<uint32_t> in = RandomWords(128, 9), out(128, 0);
  std::atomic<int> runs{0};
  std::atomic<bool> abort{false};
  auto stream = std::make_unique<sieve_test::FakeStream>();
  stream->Pause(true);  // never reaches the collective
  auto t0 = std::chrono::steady_clock::now();
  {
    ProgressEngine engine(&ops, Opts(ops, &abort));
    ASSERT_TRUE(engine.Enqueue(Transform(stream->handle(), in.data(), out.data(), 128, 16, 2,
                                         &runs)).ok());
    abort = true;
  }
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 10.0);
  EXPECT_EQ(runs.load(), 0);
  stream->Pause(false);
  stream->Drain();  // every wait on the stream was released
}

TEST(ProgressEngine, DestroyWaitsForQueuedWorkThenBoundsAStuckStream) {
  sieve_test::FakeDeviceOps ops;
  sieve_test::FakeStream stream;
  std::vector<uint32_t> in = RandomWords(2048, 10), out(2048, 0);
  {
    ProgressEngine engine(&ops, Opts(ops));
    ASSERT_TRUE(engine.Enqueue(Transform(stream.handle(), in.data(), out.data(), 2048, 100, 3)).ok());
  }  // drains: the stream is running
  stream.Drain();
  ExpectTransformed(in, out);

  sieve_test::FakeStream stuck;
  stuck.Pause(true);
  std::vector<uint32_t> out2(64, 0);
  auto t0 = std::chrono::steady_clock::now();
  {
    ProgressEngine engine(&ops, Opts(ops));  // drain_timeout_s = 2
    ASSERT_TRUE(engine.Enqueue(Transform(stuck.handle(), in.data(), out2.data(), 64, 64, 1)).ok());
  }
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_GE(s, 1.5);
  EXPECT_LT(s, 30.0);
  stuck.Pause(false);
  stuck.Drain();
}

}  // namespace
