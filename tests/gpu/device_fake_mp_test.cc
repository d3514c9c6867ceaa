// Device-buffer collectives through the public API over the fake device, as
// real processes: everything the GPU run checks, minus the GPU. Also: the
// call returns while the stream is still behind, and the blocking path.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>
#include <deque>
#include <random>
#include <thread>
#include <vector>

#include "gpu/device_checks.h"
#include "support/fake_device.h"
#include "support/fake_memory.h"
#include "support/mp_harness.h"
#include "support/reference.h"
#include "support/ternary_reference.h"
#include "kernels/ternary.h"

namespace sieve_test {
namespace {

constexpr size_t kChunk = 4096;

RankSpec Spec(int n, bool sync) {
  RankSpec spec;
  spec.nranks = n;
  // Staged (the direct path has its own test): the same here and over a CUDA UCX.
  spec.env = {{"SIEVE_GPU_CHUNK_BYTES", "4096"}, {"SIEVE_GPU_PIPELINE", "3"},
              {"SIEVE_GPU_SYNC", sync ? "1" : "0"}, {"SIEVE_TIMEOUT", "120"},
              {"SIEVE_GPU_DIRECT", "0"}};
  return spec;
}

int AllChecks(int rank, int nranks, const sieveUniqueId& id) {
  ScopedFakeRuntime rt;
  FakeMemory mem(&rt);
  sieveComm_t comm = nullptr;
  RANK_CHECK(sieveCommInitRank(&comm, nranks, id, rank) == sieveSuccess, "init: %s",
             sieveGetLastError(nullptr));
  std::string e = RunDeviceChecks(comm, rank, nranks, kChunk, mem);
  RANK_CHECK(e.empty(), "%s", e.c_str());
  RANK_CHECK(sieveCommDestroy(comm) == sieveSuccess, "destroy");
  return 0;
}

// The same checks on a non-blocking communicator: device-buffer calls still return after
// enqueueing (sieveSuccess), the host-path references return sieveInProgress and are polled.
int AllChecksNonBlocking(int rank, int nranks, const sieveUniqueId& id) {
  ScopedFakeRuntime rt;
  FakeMemory mem(&rt);
  sieveComm_t comm = nullptr;
  sieveConfig_t config = SIEVE_CONFIG_INITIALIZER;
  config.blocking = 0;
  RANK_CHECK(sieveCommInitRankConfig(&comm, nranks, id, rank, &config) == sieveInProgress,
             "init: %s", sieveGetLastError(nullptr));
  sieveResult_t async = sieveInProgress;
  while (async == sieveInProgress) {
    RANK_CHECK(sieveCommGetAsyncError(comm, &async) == sieveSuccess, "poll");
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  RANK_CHECK(async == sieveSuccess, "init: %s", sieveGetLastError(comm));
  // A device all-reduce returns after enqueueing, without sieveInProgress.
  std::vector<float> host(1001, 1.0f + rank);
  void* dev = mem.Alloc(host.size() * 4);
  mem.Upload(dev, host.data(), host.size() * 4);
  RANK_CHECK(sieveAllReduce(dev, dev, host.size(), sieveFloat32, sieveSum, comm, mem.stream()) ==
                 sieveSuccess, "device all-reduce: %s", sieveGetLastError(comm));
  mem.Synchronize();
  mem.Download(host.data(), dev, host.size() * 4);
  const float expect = nranks * (nranks + 1) / 2.0f;
  for (float v : host) RANK_CHECK(v == expect, "device all-reduce gave %g, expected %g", v, expect);
  std::string e = RunDeviceChecks(comm, rank, nranks, kChunk, mem);
  RANK_CHECK(e.empty(), "%s", e.c_str());
  RANK_CHECK(sieveCommDestroy(comm) == sieveSuccess, "destroy");
  return 0;
}

TEST(DeviceFakeMp, NonBlockingCommunicatorMatchesTheHostPath) {
  EXPECT_EQ(RunRanks(Spec(2, false), AllChecksNonBlocking), "");
}

TEST(DeviceFakeMp, TwoRanksMatchTheHostPath) { EXPECT_EQ(RunRanks(Spec(2, false), AllChecks), ""); }
TEST(DeviceFakeMp, ThreeRanksMatchTheHostPath) { EXPECT_EQ(RunRanks(Spec(3, false), AllChecks), ""); }
TEST(DeviceFakeMp, BlockingPathMatchesTheHostPath) {
  EXPECT_EQ(RunRanks(Spec(2, true), AllChecks), "");
}

// NCCL semantics: the call returns with the stream still behind; queued work
// after it on the stream sees the result.
int ReturnsBeforeTheStream(int rank, int nranks, const sieveUniqueId& id) {
  ScopedFakeRuntime rt;
  FakeMemory mem(&rt);
  sieveComm_t comm = nullptr;
  RANK_CHECK(sieveCommInitRank(&comm, nranks, id, rank) == sieveSuccess, "init");
  const size_t count = 50000;
  std::vector<double> in(count), out(count, 0), after(count, 0);
  for (size_t i = 0; i < count; ++i) in[i] = (rank + 1) * 0.5 + static_cast<double>(i);
  double* d = static_cast<double*>(mem.Alloc(count * 8));
  mem.Upload(d, in.data(), count * 8);
  mem.fake_stream().Pause(true);
  auto t0 = std::chrono::steady_clock::now();
  RANK_CHECK(sieveAllReduce(d, d, count, sieveFloat64, sieveSum, comm, mem.stream()) ==
                 sieveSuccess, "%s", sieveGetLastError(comm));
  double call_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  // A later "kernel" on the stream copies the result.
  mem.fake_stream().Push([&] {
    std::memcpy(after.data(), d, count * 8);
    return true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  RANK_CHECK(d[0] == in[0], "the device buffer changed before the stream ran");
  mem.fake_stream().Pause(false);
  mem.Synchronize();
  double ranks_sum = 0;
  for (int r = 0; r < nranks; ++r) ranks_sum += (r + 1) * 0.5;
  for (size_t i = 0; i < count; ++i)
    RANK_CHECK(after[i] == ranks_sum + nranks * static_cast<double>(i), "element %zu: %g", i,
               after[i]);
  RANK_CHECK(call_s < 5.0, "the call took %.2f s (it must only enqueue)", call_s);
  // A host call afterwards runs after the device work (one order per communicator).
  std::vector<int> h(5, rank), hr(5);
  RANK_CHECK(sieveAllReduce(h.data(), hr.data(), 5, sieveInt32, sieveMax, comm, nullptr) ==
                 sieveSuccess && hr[0] == nranks - 1, "host call after device work");
  RANK_CHECK(sieveCommDestroy(comm) == sieveSuccess, "destroy");
  return 0;
}

TEST(DeviceFakeMp, CallReturnsBeforeTheStreamReachesIt) {
  EXPECT_EQ(RunRanks(Spec(2, false), ReturnsBeforeTheStream), "");
}

// Masked all-reduce on device buffers: packed by a kernel on the stream, so
// exactly nnz x elem size bytes are staged to the host (not count x elem size),
// the result is ordered before later work on the stream, and it equals the
// reference. Without device kernels, the whole buffer is staged instead.
int MaskedStagesOnlyPacked(int rank, int nranks, const sieveUniqueId& id) {
  ScopedFakeRuntime rt;
  FakeMemory mem(&rt);
  sieveComm_t comm = nullptr;
  RANK_CHECK(sieveCommInitRank(&comm, nranks, id, rank) == sieveSuccess, "init");
  const size_t count = 40009;
  std::mt19937 mask_rng(2024);  // same mask on every rank
  std::vector<uint8_t> keep(count);
  size_t nnz = 0;
  for (auto& k : keep) nnz += (k = mask_rng() % 7 == 0);
  sieveMask_t mask = nullptr;
  RANK_CHECK(sieveMaskRegister(comm, keep.data(), sieveMaskBytes, count, sieveMaskStrict, &mask) ==
                 sieveSuccess, "register: %s", sieveGetLastError(comm));
  std::mt19937 rng(99 + rank);
  for (bool kernels : {true, false}) {
    rt.ops.kernels = kernels;
    for (sieveDataType_t t : {sieveFloat32, sieveFloat64, sieveFloat16}) {
      const size_t es = TypeSize(t), bytes = count * es;
      std::vector<char> in(bytes), after(bytes), want(bytes);
      uint64_t seed = 70 + static_cast<uint64_t>(t) + (kernels ? 0 : 100);
      FillInput(seed, rank, t, sieveSum, 0, count, in.data());
      ExpectedReduction(seed, nranks, t, sieveSum, 0, count, want.data());
      for (size_t j = 0; j < count; ++j)
        if (!keep[j]) std::memset(want.data() + j * es, 0, es);
      char* d = static_cast<char*>(mem.Alloc(bytes));
      mem.Upload(d, in.data(), bytes);
      size_t staged_before = rt.ops.bytes_to_host.load();
      int packs_before = rt.ops.packs.load();
      // The stream is behind: the call must only enqueue (the blocking path
      // waits for the stream, so there it runs unpaused).
      const char* sync_env = std::getenv("SIEVE_GPU_SYNC");
      const bool blocking = sync_env != nullptr && std::string(sync_env) == "1";
      mem.fake_stream().Pause(!blocking);
      RANK_CHECK(sieveAllReduceMasked(d, d, count, t, sieveSum, mask, comm, mem.stream()) ==
                     sieveSuccess, "masked: %s", sieveGetLastError(comm));
      mem.fake_stream().Push([&] {  // later work on the stream
        std::memcpy(after.data(), d, bytes);
        return true;
      });
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      RANK_CHECK(blocking || std::memcmp(d, in.data(), bytes) == 0,
                 "the buffer changed before the stream ran");
      mem.fake_stream().Pause(false);
      mem.Synchronize();
      size_t first = 0;
      size_t bad = CountMismatches(after.data(), want.data(), count, es, &first);
      RANK_CHECK(bad == 0, "%s kernels=%d: %zu elements wrong (first %zu)", TypeName(t), kernels,
                 bad, first);
      size_t staged = rt.ops.bytes_to_host.load() - staged_before;
      size_t expect_staged = (kernels ? nnz : count) * es;
      RANK_CHECK(staged == expect_staged, "%s kernels=%d: %zu bytes staged, expected %zu (nnz %zu)",
                 TypeName(t), kernels, staged, expect_staged, nnz);
      RANK_CHECK(rt.ops.packs.load() - packs_before == (kernels ? 1 : 0), "pack kernels launched");
    }
    // Masked + ternary stages less still, and matches the host path.
    std::vector<float> g(count), host_out(count), dev_out(count);
    for (auto& v : g) v = std::uniform_real_distribution<float>(-1, 1)(rng);
    sieveTernaryParams_t p = {};
    p.seed = 5;
    p.step = kernels ? 1 : 2;
    p.mask = mask;
    RANK_CHECK(sieveAllReduceTernary(g.data(), host_out.data(), count, sieveFloat32, sieveAvg, &p,
                                     comm, nullptr) == sieveSuccess, "host ternary: %s",
               sieveGetLastError(comm));
    float* d = static_cast<float*>(mem.Alloc(count * 4));
    mem.Upload(d, g.data(), count * 4);
    size_t staged_before = rt.ops.bytes_to_host.load();
    RANK_CHECK(sieveAllReduceTernary(d, d, count, sieveFloat32, sieveAvg, &p, comm,
                                     mem.stream()) == sieveSuccess, "device ternary: %s",
               sieveGetLastError(comm));
    mem.Synchronize();
    mem.Download(dev_out.data(), d, count * 4);
    size_t first = 0;
    size_t bad = CountMismatches(dev_out.data(), host_out.data(), count, 4, &first);
    RANK_CHECK(bad == 0, "masked ternary kernels=%d: %zu elements differ from the host path "
               "(first %zu)", kernels, bad, first);
    // With kernels: packed and quantized on the device, only the block maxima
    // and the 2-bit wire of the nnz kept elements staged (device_masked_ternary.h).
    size_t staged = rt.ops.bytes_to_host.load() - staged_before;
    const size_t compressed = (nnz + 2047) / 2048 * 4 + (nnz + 3) / 4;
    RANK_CHECK(staged == (kernels ? compressed : count * 4),
               "masked ternary kernels=%d: %zu bytes staged (nnz %zu)", kernels, staged, nnz);
  }
  RANK_CHECK(sieveMaskDeregister(mask) == sieveSuccess, "deregister");
  RANK_CHECK(sieveCommDestroy(comm) == sieveSuccess, "destroy");
  return 0;
}

TEST(DeviceFakeMp, MaskedStagesOnlyThePackedElements) {
  EXPECT_EQ(RunRanks(Spec(4, false), MaskedStagesOnlyPacked), "");
}
TEST(DeviceFakeMp, MaskedStagesOnlyThePackedElementsBlocking) {
  EXPECT_EQ(RunRanks(Spec(2, true), MaskedStagesOnlyPacked), "");
}

// Dense ternary on device buffers: quantized and dequantized by kernels on the
// stream, so the staged bytes are the compressed sizes (to the host: the block
// maxima and the 2-bit wire; back: the agreed scales and the final sums in
// TernaryBits(n) bits), not count x elem size; the call only enqueues (the stream is paused)
// and later work on the stream sees the result, which equals the host path.
// Error feedback takes the device path too (the residual in device memory,
// updated in the quantize pass); without device kernels the whole buffer is staged.
// The same at L = 7 levels (sieveAllReduceQuantized): codes in TernaryBits(7) bits,
// final sums in TernaryBits(7n).
int DenseTernaryStagesCompressed(int rank, int nranks, const sieveUniqueId& id) {
  ScopedFakeRuntime rt;
  FakeMemory mem(&rt);
  sieveComm_t comm = nullptr;
  RANK_CHECK(sieveCommInitRank(&comm, nranks, id, rank) == sieveSuccess, "init");
  const char* sync_env = std::getenv("SIEVE_GPU_SYNC");
  const bool blocking = sync_env != nullptr && std::string(sync_env) == "1";
  const size_t count = 40009, block = 1000;
  const size_t nblocks = (count + block - 1) / block;
  enum Path { kKernels, kNoKernels, kFeedback };
  std::vector<std::vector<char>> inputs;  // residuals are per buffer: every input kept alive
  for (int levels : {1, 7})
  for (Path path : {kKernels, kNoKernels, kFeedback}) {
    const size_t wire =
        sieve::kernels::TernaryPackedBytes(count, sieve::kernels::TernaryBits(levels));
    const size_t sums =
        sieve::kernels::TernaryPackedBytes(count, sieve::kernels::TernaryBits(nranks * levels));
    auto all_reduce = [&](const void* send, void* recv, sieveDataType_t t,
                          const sieveTernaryParams_t* p, sieveStream_t stream) {
      return levels == 1
                 ? sieveAllReduceTernary(send, recv, count, t, sieveAvg, p, comm, stream)
                 : sieveAllReduceQuantized(send, recv, count, t, sieveAvg, levels, p, comm,
                                           stream);
    };
    rt.ops.kernels = path != kNoKernels;
    for (sieveDataType_t t : {sieveFloat32, sieveFloat16, sieveBfloat16}) {
      const size_t es = TypeSize(t), bytes = count * es;
      inputs.emplace_back(bytes);
      std::vector<char>& in = inputs.back();
      std::vector<char> want(bytes), after(bytes);
      FillTernaryInput(900 + static_cast<uint64_t>(t), rank, t, count, in.data());
      sieveTernaryParams_t p = {};
      p.seed = 31;
      p.step = static_cast<uint64_t>(path);
      p.block_size = block;
      p.error_feedback = path == kFeedback;
      // The reference: the host path (its own residual under error feedback).
      RANK_CHECK(all_reduce(in.data(), want.data(), t, &p, nullptr) == sieveSuccess, "host: %s",
                 sieveGetLastError(comm));
      char* d = static_cast<char*>(mem.Alloc(bytes));
      mem.Upload(d, in.data(), bytes);
      const size_t staged_before = rt.ops.bytes_to_host.load();
      const size_t back_before = rt.ops.bytes_to_device.load();
      const int absmax_before = rt.ops.ternary_absmax.load();
      const int quantize_before = rt.ops.ternary_quantize.load();
      const int dequantize_before = rt.ops.ternary_dequantize.load();
      const int quantize_fb_before = rt.ops.ternary_quantize_feedback.load();
      const int apply_before = rt.ops.ternary_feedback_apply.load();
      mem.fake_stream().Pause(!blocking);  // the blocking path waits for the stream
      RANK_CHECK(all_reduce(d, d, t, &p, mem.stream()) == sieveSuccess, "device: %s",
                 sieveGetLastError(comm));
      mem.fake_stream().Push([&] {  // later work on the stream
        std::memcpy(after.data(), d, bytes);
        return true;
      });
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      RANK_CHECK(blocking || std::memcmp(d, in.data(), bytes) == 0,
                 "the buffer changed before the stream ran");
      mem.fake_stream().Pause(false);
      mem.Synchronize();
      size_t first = 0;
      size_t bad = CountMismatches(after.data(), want.data(), count, es, &first);
      RANK_CHECK(bad == 0, "L %d %s path %d: %zu elements differ from the host path (first %zu)",
                 levels, TypeName(t), path, bad, first);
      const bool device = path != kNoKernels, feedback = path == kFeedback;
      const size_t staged = rt.ops.bytes_to_host.load() - staged_before;
      const size_t expect_staged = device ? nblocks * 4 + wire : bytes;
      RANK_CHECK(staged == expect_staged, "L %d %s path %d: %zu bytes staged, expected %zu",
                 levels, TypeName(t), path, staged, expect_staged);
      const size_t back = rt.ops.bytes_to_device.load() - back_before;
      const size_t expect_back = device ? nblocks * 4 + sums : bytes;
      RANK_CHECK(back == expect_back, "%s path %d: %zu bytes copied back, expected %zu",
                 TypeName(t), path, back, expect_back);
      RANK_CHECK(rt.ops.ternary_absmax.load() - absmax_before == (device ? 1 : 0) &&
                     rt.ops.ternary_quantize.load() - quantize_before ==
                         (device && !feedback ? 1 : 0) &&
                     rt.ops.ternary_quantize_feedback.load() - quantize_fb_before ==
                         (feedback ? 1 : 0) &&
                     rt.ops.ternary_feedback_apply.load() - apply_before == (feedback ? 1 : 0) &&
                     rt.ops.ternary_dequantize.load() - dequantize_before == (device ? 1 : 0),
                 "%s path %d: ternary kernels launched", TypeName(t), path);
    }
  }
  RANK_CHECK(sieveCommDestroy(comm) == sieveSuccess, "destroy");
  return 0;
}

TEST(DeviceFakeMp, DenseTernaryStagesOnlyScalesAndWire) {
  EXPECT_EQ(RunRanks(Spec(3, false), DenseTernaryStagesCompressed), "");
}
TEST(DeviceFakeMp, DenseTernaryStagesOnlyScalesAndWireBlocking) {
  EXPECT_EQ(RunRanks(Spec(2, true), DenseTernaryStagesCompressed), "");
}

// A device rank and host ranks in one dense ternary all-reduce: the device
// path issues the host path's network operations in the same order, so they
// interoperate, and every rank gets the host path's result.
int DeviceAndHostRanksMix(int rank, int nranks, const sieveUniqueId& id) {
  ScopedFakeRuntime rt;
  FakeMemory mem(&rt);
  sieveComm_t comm = nullptr;
  RANK_CHECK(sieveCommInitRank(&comm, nranks, id, rank) == sieveSuccess, "init");
  const size_t count = 12345;
  std::vector<float> in(count), want(count), got(count);
  FillTernaryInput(4242, rank, sieveFloat32, count, in.data());
  sieveTernaryParams_t p = {};
  p.seed = 7;
  p.step = 3;
  RANK_CHECK(sieveAllReduceTernary(in.data(), want.data(), count, sieveFloat32, sieveSum, &p,
                                   comm, nullptr) == sieveSuccess, "host: %s",
             sieveGetLastError(comm));
  if (rank == 0) {  // the device rank
    float* d = static_cast<float*>(mem.Alloc(count * 4));
    mem.Upload(d, in.data(), count * 4);
    RANK_CHECK(sieveAllReduceTernary(d, d, count, sieveFloat32, sieveSum, &p, comm,
                                     mem.stream()) == sieveSuccess, "device: %s",
               sieveGetLastError(comm));
    mem.Synchronize();
    mem.Download(got.data(), d, count * 4);
    RANK_CHECK(rt.ops.ternary_quantize.load() == 1, "rank 0 did not quantize on the device");
  } else {
    RANK_CHECK(sieveAllReduceTernary(in.data(), got.data(), count, sieveFloat32, sieveSum, &p,
                                     comm, nullptr) == sieveSuccess, "host: %s",
               sieveGetLastError(comm));
  }
  size_t first = 0;
  size_t bad = CountMismatches(got.data(), want.data(), count, 4, &first);
  RANK_CHECK(bad == 0, "%zu elements differ from the all-host run (first %zu)", bad, first);
  RANK_CHECK(sieveCommDestroy(comm) == sieveSuccess, "destroy");
  return 0;
}

TEST(DeviceFakeMp, DenseTernaryDeviceRankWithHostRanks) {
  EXPECT_EQ(RunRanks(Spec(4, false), DeviceAndHostRanksMix), "");
}

// The mask tracker on device buffers: each whole buffer is staged at the same
// pinned address every call (its own slot, even with another buffer reduced in
// between), so the tracker tells two gradients apart, learns each zero pattern
// and switches both to the masked all-reduce; results stay exact.
int TrackerOnDeviceBuffer(int rank, int nranks, const sieveUniqueId& id) {
  ScopedFakeRuntime rt;
  FakeMemory mem(&rt);
  sieveComm_t comm = nullptr;
  RANK_CHECK(sieveCommInitRank(&comm, nranks, id, rank) == sieveSuccess, "init");
  const size_t count = 20011;
  float* bufs[2] = {static_cast<float*>(mem.Alloc(count * 4)),
                    static_cast<float*>(mem.Alloc(count * 4))};
  const size_t every[2] = {3, 5};  // two different fixed zero patterns
  std::vector<float> g(count), out(count);
  for (int step = 0; step < 16; ++step) {
    int b = step % 2;
    for (size_t i = 0; i < count; ++i)  // values change per step, the pattern does not
      g[i] = i % every[b] == 0 ? static_cast<float>((i + step) % 17 + rank + 1) : 0.0f;
    mem.Upload(bufs[b], g.data(), count * 4);
    RANK_CHECK(sieveAllReduce(bufs[b], bufs[b], count, sieveFloat32, sieveSum, comm,
                              mem.stream()) == sieveSuccess,
               "step %d: %s", step, sieveGetLastError(comm));
    mem.Download(out.data(), bufs[b], count * 4);
    for (size_t i = 0; i < count; ++i) {
      float want = i % every[b] == 0 ? static_cast<float>(nranks * ((i + step) % 17 + 1) +
                                                          nranks * (nranks - 1) / 2)
                                     : 0.0f;
      RANK_CHECK(out[i] == want, "step %d element %zu: %g, expected %g", step, i, out[i], want);
    }
  }
  sieveCounters_t c;
  RANK_CHECK(sieveCommGetCounters(comm, &c) == sieveSuccess, "counters");
  RANK_CHECK(c.masked_collectives >= 8, "only %llu of 16 steps ran masked",
             static_cast<unsigned long long>(c.masked_collectives));
  RANK_CHECK(sieveCommDestroy(comm) == sieveSuccess, "destroy");
  return 0;
}

TEST(DeviceFakeMp, MaskTrackerRecognisesADeviceBuffer) {
  RankSpec spec = Spec(2, false);
  spec.env.push_back({"SIEVE_AUTO_MASK", "1"});
  EXPECT_EQ(RunRanks(spec, TrackerOnDeviceBuffer), "");
}

// Without a CUDA driver (this machine, CI) device-looking pointers cannot
// exist: the real runtime classifies everything as host and the library runs
// unchanged; here the fake is absent and host buffers work as always.
int NoCudaIsHostPath(int rank, int nranks, const sieveUniqueId& id) {
  sieveComm_t comm = nullptr;
  RANK_CHECK(sieveCommInitRank(&comm, nranks, id, rank) == sieveSuccess, "init");
  std::vector<float> in(1001, 1.0f + rank), out(1001);
  RANK_CHECK(sieveAllReduce(in.data(), out.data(), 1001, sieveFloat32, sieveSum, comm, nullptr) ==
                 sieveSuccess, "%s", sieveGetLastError(comm));
  RANK_CHECK(out[1000] == (nranks * (nranks + 1)) / 2.0f, "sum %g", out[1000]);
  RANK_CHECK(sieveCommDestroy(comm) == sieveSuccess, "destroy");
  return 0;
}

TEST(DeviceFakeMp, HostBuffersWithTheRealRuntime) {
  EXPECT_EQ(RunRanks(Spec(2, false), NoCudaIsHostPath), "");
}

}  // namespace
}  // namespace sieve_test
