// The driver's rules the device path must keep, over the strict fake device
// (support/fake_device.h), as real processes: stream-ordered memory that
// moves between streams gets an event; a communicator keeps its device and
// says so when a call comes from another; no memory pools means staging;
// device calls grouped on a non-blocking communicator are enqueued by the
// caller, in call order, in its context; CUDA_DEVICE_MAX_CONNECTIONS=1 keeps
// the direct path off. Each would fail on the code before these fixes (the
// fake reports the breach, which also fails the call).
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "gpu/device_check_ok.h"
#include "support/fake_memory.h"
#include "support/mp_harness.h"
#include "support/ternary_reference.h"

namespace sieve_test {
namespace {

RankSpec Spec(int n, std::vector<std::pair<std::string, std::string>> extra = {}) {
  RankSpec spec;
  spec.nranks = n;
  spec.env = {{"SIEVE_GPU_CHUNK_BYTES", "4096"}, {"SIEVE_TIMEOUT", "60"},
              {"SIEVE_GPU_DIRECT", "0"}};
  for (auto& e : extra) spec.env.push_back(e);
  return spec;
}

// Masked + ternary with error feedback, then plain masked, alternating two
// streams: the mask's device copy and the residual (stream-ordered memory)
// move between them. Equal to the host path each time; no breach recorded.
std::string AlternateStreams(sieveComm_t comm, int rank, FakeMemory& mem, FakeStream& other,
                             FakeDeviceOps& ops) {
  const size_t count = 5001;
  std::vector<uint8_t> keep(count);
  for (size_t j = 0; j < count; ++j) keep[j] = (j * 7) % 3 != 0;
  sieveMask_t mask = nullptr;
  CHECK_OK(sieveMaskRegister(comm, keep.data(), sieveMaskBytes, count, sieveMaskStrict, &mask),
           "mask register");
  std::vector<float> send(count), host_out(count), dev_out(count);
  float* d = static_cast<float*>(mem.Alloc(count * 4));
  float* d_out = static_cast<float*>(mem.Alloc(count * 4));
  for (int step = 0; step < 4; ++step) {
    FakeStream& s = step % 2 == 0 ? mem.fake_stream() : other;
    FillTernaryInput(77 + step, rank, sieveFloat32, count, send.data());
    const sieveTernaryParams_t p = TernaryParams(5, static_cast<uint64_t>(step), 0, mask, 1);
    CHECK_OK(sieveAllReduceTernary(send.data(), host_out.data(), count, sieveFloat32, sieveSum,
                                   &p, comm, nullptr), "host ternary step %d", step);
    mem.Upload(d, send.data(), count * 4);
    other.Drain();
    CHECK_OK(sieveAllReduceTernary(d, d_out, count, sieveFloat32, sieveSum, &p, comm,
                                   s.handle()), "device ternary step %d", step);
    s.Drain();
    mem.Download(dev_out.data(), d_out, count * 4);
    if (dev_out != host_out) return "masked ternary step " + std::to_string(step) + " differs";
    CHECK_OK(sieveAllReduceMasked(send.data(), host_out.data(), count, sieveFloat32, sieveSum, mask,
                                  comm, nullptr), "host masked step %d", step);
    CHECK_OK(sieveAllReduceMasked(d, d_out, count, sieveFloat32, sieveSum, mask, comm,
                                  s.handle()), "device masked step %d", step);
    s.Drain();
    mem.Download(dev_out.data(), d_out, count * 4);
    if (dev_out != host_out) return "masked step " + std::to_string(step) + " differs";
  }
  CHECK_OK(sieveMaskDeregister(mask), "mask deregister");
  std::vector<std::string> v = ops.TakeViolations();
  if (!v.empty()) return "the fake device recorded: " + v[0];
  if (ops.events.load() == 0) return "no event ordered the streams";
  return "";
}

int StreamOrderedMemoryAcrossStreams(int rank, int n, const sieveUniqueId& id) {
  ScopedFakeRuntime rt;
  FakeMemory mem(&rt);
  FakeStream other;
  sieveComm_t comm = nullptr;
  RANK_CHECK(sieveCommInitRank(&comm, n, id, rank) == sieveSuccess, "init");
  std::string e = AlternateStreams(comm, rank, mem, other, rt.ops);
  RANK_CHECK(e.empty(), "%s", e.c_str());
  RANK_CHECK(sieveCommDestroy(comm) == sieveSuccess, "destroy");
  other.Drain();
  return 0;
}

TEST(DeviceRulesFakeMp, StreamOrderedMemoryMovesBetweenStreamsWithAnEvent) {
  EXPECT_EQ(RunRanks(Spec(2), StreamOrderedMemoryAcrossStreams), "");
}

// A device without memory pools: the compressed modes stage the whole buffer
// (no cuMemAllocAsync), with the same results.
int NoPoolsStages(int rank, int n, const sieveUniqueId& id) {
  ScopedFakeRuntime rt;
  rt.ops.memory_pools = false;
  FakeMemory mem(&rt);
  FakeStream other;
  sieveComm_t comm = nullptr;
  RANK_CHECK(sieveCommInitRank(&comm, n, id, rank) == sieveSuccess, "init");
  std::string e = AlternateStreams(comm, rank, mem, other, rt.ops);
  RANK_CHECK(e.find("no event") != std::string::npos || e.empty(), "%s", e.c_str());
  RANK_CHECK(rt.ops.packs.load() == 0 && rt.ops.ternary_quantize_feedback.load() == 0,
             "device kernels ran on a device without memory pools");
  RANK_CHECK(sieveCommDestroy(comm) == sieveSuccess, "destroy");
  return 0;
}

TEST(DeviceRulesFakeMp, WithoutMemoryPoolsTheCompressedModesStage) {
  EXPECT_EQ(RunRanks(Spec(2), NoPoolsStages), "");
}

// The first device call fixes the communicator's device; a call from a
// thread whose current context is another device's, or on another device's
// buffer, is a clear error and the communicator still works.
int KeepsItsDevice(int rank, int n, const sieveUniqueId& id) {
  ScopedFakeRuntime rt;
  FakeMemory mem(&rt);
  sieveComm_t comm = nullptr;
  RANK_CHECK(sieveCommInitRank(&comm, n, id, rank) == sieveSuccess, "init");
  const size_t count = 1001;
  std::vector<float> in(count, 1.0f + rank), out(count);
  float* d = static_cast<float*>(mem.Alloc(count * 4));
  mem.Upload(d, in.data(), count * 4);
  RANK_CHECK(sieveAllReduce(d, d, count, sieveFloat32, sieveSum, comm, mem.stream()) ==
                 sieveSuccess, "first call: %s", sieveGetLastError(comm));
  {
    FakeDeviceOps::ScopedContext device1(rt.ops, 1);
    const sieveResult_t r = sieveAllReduce(d, d, count, sieveFloat32, sieveSum, comm, mem.stream());
    const std::string msg = sieveGetLastError(comm);
    RANK_CHECK(r == sieveInvalidUsage && msg.find("device 0") != std::string::npos &&
                   msg.find("device 1") != std::string::npos && msg.find("cudaSetDevice") !=
                   std::string::npos,
               "another device's context: got %d \"%s\"", r, msg.c_str());
  }
  std::vector<char> elsewhere(count * 4 + 64);
  rt.classifier.AddArena(elsewhere.data(), elsewhere.size(), /*device=*/1);
  sieveResult_t r = sieveAllReduce(elsewhere.data(), elsewhere.data(), count, sieveFloat32,
                                   sieveSum, comm, mem.stream());
  std::string msg = sieveGetLastError(comm);
  RANK_CHECK(r == sieveInvalidUsage && msg.find("memory of device 1") != std::string::npos,
             "another device's buffer: got %d \"%s\"", r, msg.c_str());
  // A thread with no context at all.
  std::thread([&] {
    r = sieveAllReduce(d, d, count, sieveFloat32, sieveSum, comm, mem.stream());
    msg = sieveGetLastError(comm);
  }).join();
  RANK_CHECK(r != sieveSuccess && msg.find("no CUDA context") != std::string::npos,
             "no context: got %d \"%s\"", r, msg.c_str());
  RANK_CHECK(rt.ops.TakeViolations().empty(), "a driver call without a context was made");
  RANK_CHECK(sieveAllReduce(d, d, count, sieveFloat32, sieveSum, comm, mem.stream()) ==
                 sieveSuccess, "after the errors: %s", sieveGetLastError(comm));
  mem.Synchronize();
  mem.Download(out.data(), d, count * 4);
  const float want = (n * (n + 1) / 2.0f) * n;  // summed twice
  for (float v : out) RANK_CHECK(v == want, "got %g, want %g", v, want);
  RANK_CHECK(sieveCommDestroy(comm) == sieveSuccess, "destroy");
  return 0;
}

TEST(DeviceRulesFakeMp, ACommunicatorKeepsItsDevice) {
  EXPECT_EQ(RunRanks(Spec(2), KeepsItsDevice), "");
}

// Device calls grouped on a non-blocking communicator: enqueued by the
// caller in call order (the background thread has no CUDA context), so a
// stream operation queued right after sieveGroupEnd sees both results; a
// group mixing host and device buffers is refused.
int GroupedOnNonBlocking(int rank, int n, const sieveUniqueId& id) {
  ScopedFakeRuntime rt;
  FakeMemory mem(&rt);
  sieveComm_t comm = nullptr;
  sieveConfig_t config = SIEVE_CONFIG_INITIALIZER;
  config.blocking = 0;
  RANK_CHECK(sieveCommInitRankConfig(&comm, n, id, rank, &config) == sieveInProgress, "init");
  RANK_CHECK(Completed(comm, sieveInProgress) == sieveSuccess, "init: %s",
             sieveGetLastError(comm));
  const size_t count = 3001;
  std::vector<float> a(count, 1.0f + rank), b(count, 10.0f * (rank + 1));
  float* da = static_cast<float*>(mem.Alloc(count * 4));
  float* db = static_cast<float*>(mem.Alloc(count * 4));
  mem.Upload(da, a.data(), count * 4);
  mem.Upload(db, b.data(), count * 4);
  mem.fake_stream().Pause(true);
  RANK_CHECK(sieveGroupStart() == sieveSuccess, "group start");
  RANK_CHECK(sieveAllReduce(da, da, count, sieveFloat32, sieveSum, comm, mem.stream()) ==
                 sieveSuccess, "queue a");
  RANK_CHECK(sieveAllReduce(db, db, count, sieveFloat32, sieveMax, comm, mem.stream()) ==
                 sieveSuccess, "queue b");
  const sieveResult_t ended = sieveGroupEnd();
  RANK_CHECK(ended == sieveSuccess, "group end: %d %s", ended, sieveGetLastError(comm));
  // Both are on the stream already: work queued now runs after them.
  std::vector<float> seen_a(count), seen_b(count);
  mem.fake_stream().Push([&] {
    std::memcpy(seen_a.data(), da, count * 4);
    std::memcpy(seen_b.data(), db, count * 4);
    return true;
  });
  mem.fake_stream().Pause(false);
  mem.Synchronize();
  const float sum = n * (n + 1) / 2.0f, max = 10.0f * n;
  for (size_t j = 0; j < count; ++j)
    RANK_CHECK(seen_a[j] == sum && seen_b[j] == max, "element %zu: %g %g, want %g %g", j,
               seen_a[j], seen_b[j], sum, max);
  // Host and device buffers in one group on a non-blocking communicator.
  std::vector<float> host(count, 1.0f);
  RANK_CHECK(sieveGroupStart() == sieveSuccess, "group start");
  sieveAllReduce(host.data(), host.data(), count, sieveFloat32, sieveSum, comm, nullptr);
  sieveAllReduce(da, da, count, sieveFloat32, sieveSum, comm, mem.stream());
  const sieveResult_t mixed = sieveGroupEnd();
  const std::string msg = sieveGetLastError(nullptr);  // a group names no communicator
  RANK_CHECK(mixed == sieveInvalidUsage && msg.find("separate groups") != std::string::npos,
             "mixed group: got %d \"%s\"", mixed, msg.c_str());
  RANK_CHECK(rt.ops.TakeViolations().empty(), "the fake device recorded a breach");
  RANK_CHECK(sieveCommDestroy(comm) == sieveSuccess, "destroy");
  return 0;
}

TEST(DeviceRulesFakeMp, GroupedDeviceCallsOnANonBlockingCommunicatorAreEnqueuedByTheCaller) {
  EXPECT_EQ(RunRanks(Spec(2), GroupedOnNonBlocking), "");
}

// One hardware queue (CUDA_DEVICE_MAX_CONNECTIONS=1): the direct path's
// kernels would queue behind the parked stream, so the calls are staged and
// the INFO line says why; with the blocking handshake direct is fine.
int MaxConnectionsOne(int rank, int n, const sieveUniqueId& id) {
  ScopedFakeRuntime rt;
  FakeMemory mem(&rt);
  sieveComm_t comm = nullptr;
  RANK_CHECK(sieveCommInitRank(&comm, n, id, rank) == sieveSuccess, "init");
  const size_t count = 2001;
  std::vector<float> in(count, 2.0f), out(count);
  float* d = static_cast<float*>(mem.Alloc(count * 4));
  mem.Upload(d, in.data(), count * 4);
  RANK_CHECK(sieveAllReduce(d, d, count, sieveFloat32, sieveSum, comm, mem.stream()) ==
                 sieveSuccess, "%s", sieveGetLastError(comm));
  mem.Synchronize();
  mem.Download(out.data(), d, count * 4);
  for (float v : out) RANK_CHECK(v == 2.0f * n, "got %g", v);
  const bool sync = std::string(std::getenv("SIEVE_GPU_SYNC")) == "1";
  const bool staged = rt.ops.bytes_to_host.load() > 0;
  RANK_CHECK(staged != sync, "%s with SIEVE_GPU_SYNC=%d", staged ? "staged" : "direct", sync);
  RANK_CHECK(sieveCommDestroy(comm) == sieveSuccess, "destroy");
  return 0;
}

TEST(DeviceRulesFakeMp, OneHardwareQueueKeepsTheDirectPathOff) {
  EXPECT_EQ(RunRanks(Spec(2, {{"SIEVE_GPU_DIRECT", "FORCE"}, {"SIEVE_GPU_SYNC", "0"},
                              {"CUDA_DEVICE_MAX_CONNECTIONS", "1"}}),
                     MaxConnectionsOne),
            "");
  EXPECT_EQ(RunRanks(Spec(2, {{"SIEVE_GPU_DIRECT", "FORCE"}, {"SIEVE_GPU_SYNC", "1"},
                              {"CUDA_DEVICE_MAX_CONNECTIONS", "1"}}),
                     MaxConnectionsOne),
            "");
}

}  // namespace
}  // namespace sieve_test
