// The direct path of the dense collectives on device buffers
// (gpu/direct_collectives.h) over the fake device, as real processes
// over TCP: SIEVE_GPU_DIRECT=FORCE stands in for a UCX with CUDA memory support
// (the fake's device memory is host memory). Results equal the host path bit
// for bit (random reals show any change of reduction order), nothing is
// staged, the reductions are the device's, the stream handshake holds, a
// failing device kernel fails the collective on every rank, and the choice is
// reported at SIEVE_DEBUG=INFO.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "api/arg_check.h"
#include "plan/link_rate.h"
#include "support/fake_memory.h"
#include "kernels/dtype.h"
#include "support/mp_harness.h"
#include "support/reference.h"
#include "transport/tag.h"

namespace sieve_test {
namespace {

const sieveDataType_t kTypes[] = {sieveInt8,    sieveUint8,   sieveInt32,   sieveUint32,
                                  sieveInt64,   sieveUint64,  sieveFloat16, sieveBfloat16,
                                  sieveFloat32, sieveFloat64};
const sieveRedOp_t kOps[] = {sieveSum, sieveProd, sieveMax, sieveMin, sieveAvg};

bool Floating(sieveDataType_t t) {
  return t == sieveFloat16 || t == sieveBfloat16 || t == sieveFloat32 || t == sieveFloat64;
}

// Random reals in [-1, 1): the summation order shows in the bits.
void FillReals(std::mt19937_64& rng, sieveDataType_t t, size_t n, void* out) {
  std::uniform_real_distribution<double> u(-1, 1);
  for (size_t i = 0; i < n; ++i) {
    double v = u(rng);
    switch (t) {
      case sieveFloat16:
        static_cast<uint16_t*>(out)[i] = sieve::kernels::FloatToHalf(static_cast<float>(v));
        break;
      case sieveBfloat16:
        static_cast<uint16_t*>(out)[i] = sieve::kernels::FloatToBf16(static_cast<float>(v));
        break;
      case sieveFloat32: static_cast<float*>(out)[i] = static_cast<float>(v); break;
      default: static_cast<double*>(out)[i] = v; break;
    }
  }
}

// A fresh seed per run, the same on every rank (rank 0's, broadcast).
uint64_t SharedSeed(sieveComm_t comm, int rank) {
  uint64_t seed = rank == 0 ? (uint64_t{std::random_device{}()} << 32) ^ std::random_device{}() : 0;
  if (sieveBroadcast(&seed, &seed, 1, sieveUint64, 0, comm, nullptr) != sieveSuccess) return 0;
  return seed;
}

// One all-reduce on host buffers (the reference) and on device buffers; "" or what differs.
std::string OneCase(sieveComm_t comm, int rank, int n, FakeMemory& mem, sieveDataType_t t,
                    sieveRedOp_t op, size_t count, bool in_place, uint64_t seed) {
  const size_t es = TypeSize(t), bytes = count * es;
  std::vector<char> in(bytes), host_out(bytes, 0x5a), dev_out(bytes);
  std::mt19937_64 rng(seed * 131 + static_cast<uint64_t>(rank));
  if (Floating(t)) FillReals(rng, t, count, in.data());
  else FillInput(seed, rank, t, op, 0, count, in.data());
  if (sieveAllReduce(in.data(), host_out.data(), count, t, op, comm, nullptr) != sieveSuccess)
    return std::string("host all-reduce: ") + sieveGetLastError(comm);
  char* d_in = static_cast<char*>(mem.Alloc(bytes));
  char* d_out = in_place ? d_in : static_cast<char*>(mem.Alloc(bytes));
  mem.Upload(d_in, in.data(), bytes);
  if (!in_place) {
    std::vector<char> sentinel(bytes, static_cast<char>(0xa5));
    mem.Upload(d_out, sentinel.data(), bytes);
  }
  if (sieveAllReduce(d_in, d_out, count, t, op, comm, mem.stream()) != sieveSuccess)
    return std::string("device all-reduce: ") + sieveGetLastError(comm);
  mem.Synchronize();
  mem.Download(dev_out.data(), d_out, bytes);
  std::ostringstream what;
  what << TypeName(t) << " " << OpName(op) << " count " << count
       << (in_place ? " in place" : " out of place") << " (seed " << seed << "): ";
  size_t first = 0;
  size_t bad = CountMismatches(dev_out.data(), host_out.data(), count, es, &first);
  if (bad != 0) {
    what << bad << " elements differ from the host path, first at " << first;
    return what.str();
  }
  if (!Floating(t)) {  // integers: the exact reference too
    std::vector<char> want(bytes);
    ExpectedReduction(seed, n, t, op, 0, count, want.data());
    bad = CountMismatches(dev_out.data(), want.data(), count, es, &first);
    if (bad != 0) {
      what << bad << " elements differ from the reference, first at " << first;
      return what.str();
    }
  }
  if (!in_place && std::memcmp(d_in, in.data(), bytes) != 0) {
    what << "the send buffer was modified";
    return what.str();
  }
  return "";
}

// This rank's SIEVE_DEBUG_FILE (Spec), removed when the rank's function ends.
std::string OwnLogPath() { return "/tmp/sieve-direct-test-" + std::to_string(getpid()) + ".log"; }
struct RemoveOwnLog {
  ~RemoveOwnLog() { std::remove(OwnLogPath().c_str()); }
};

// One broadcast (from `root`) or all-gather on host buffers and on device buffers.
std::string MoveCase(sieveComm_t comm, int rank, int n, FakeMemory& mem, bool gather,
                     sieveDataType_t t, size_t count, bool in_place, int root, uint64_t seed) {
  const size_t es = TypeSize(t), bytes = count * es, out_bytes = gather ? bytes * n : bytes;
  std::vector<char> in(bytes), host_out(out_bytes, 0x5a), dev_out(out_bytes);
  FillInput(seed, rank, t, sieveSum, 0, count, in.data());
  sieveResult_t r = gather ? sieveAllGather(in.data(), host_out.data(), count, t, comm, nullptr)
                           : sieveBroadcast(in.data(), host_out.data(), count, t, root, comm,
                                            nullptr);
  if (r != sieveSuccess) return std::string("host: ") + sieveGetLastError(comm);
  char* d_out = static_cast<char*>(mem.Alloc(out_bytes));
  std::vector<char> sentinel(out_bytes, static_cast<char>(0xa5));
  mem.Upload(d_out, sentinel.data(), out_bytes);
  // In place as NCCL defines it: our block of recvbuff (all-gather), recvbuff (broadcast).
  char* d_in = in_place ? d_out + (gather ? static_cast<size_t>(rank) * bytes : 0)
                        : static_cast<char*>(mem.Alloc(bytes));
  mem.Upload(d_in, in.data(), bytes);
  r = gather ? sieveAllGather(d_in, d_out, count, t, comm, mem.stream())
             : sieveBroadcast(d_in, d_out, count, t, root, comm, mem.stream());
  if (r != sieveSuccess) return std::string("device: ") + sieveGetLastError(comm);
  mem.Synchronize();
  mem.Download(dev_out.data(), d_out, out_bytes);
  size_t first = 0;
  size_t bad = CountMismatches(dev_out.data(), host_out.data(), out_bytes / es, es, &first);
  if (bad == 0) return "";
  std::ostringstream what;
  what << (gather ? "allgather " : "broadcast ") << TypeName(t) << " count " << count
       << (in_place ? " in place" : " out of place") << " root " << root << " (seed " << seed
       << "): " << bad << " elements differ from the host path, first at " << first;
  return what.str();
}

// One reduce (to `root`) or reduce-scatter of random reals on host buffers and
// on device buffers (the partials' order shows in the bits).
std::string ReduceCase(sieveComm_t comm, int rank, int n, FakeMemory& mem, bool scatter,
                       sieveDataType_t t, sieveRedOp_t op, size_t count, int root,
                       uint64_t seed) {
  const size_t es = TypeSize(t), out_bytes = count * es;
  const size_t in_bytes = scatter ? out_bytes * n : out_bytes;
  std::vector<char> in(in_bytes), host_out(out_bytes, 0x5a), dev_out(out_bytes);
  std::mt19937_64 rng(seed * 131 + static_cast<uint64_t>(rank));
  FillReals(rng, t, in_bytes / es, in.data());
  sieveResult_t r =
      scatter ? sieveReduceScatter(in.data(), host_out.data(), count, t, op, comm, nullptr)
              : sieveReduce(in.data(), host_out.data(), count, t, op, root, comm, nullptr);
  if (r != sieveSuccess) return std::string("host: ") + sieveGetLastError(comm);
  char* d_in = static_cast<char*>(mem.Alloc(in_bytes));
  char* d_out = static_cast<char*>(mem.Alloc(out_bytes));
  mem.Upload(d_in, in.data(), in_bytes);
  r = scatter ? sieveReduceScatter(d_in, d_out, count, t, op, comm, mem.stream())
              : sieveReduce(d_in, d_out, count, t, op, root, comm, mem.stream());
  if (r != sieveSuccess) return std::string("device: ") + sieveGetLastError(comm);
  mem.Synchronize();
  if (!scatter && rank != root) return "";  // recvbuff unused off the root
  mem.Download(dev_out.data(), d_out, out_bytes);
  size_t first = 0;
  size_t bad = CountMismatches(dev_out.data(), host_out.data(), count, es, &first);
  if (bad == 0) return "";
  std::ostringstream what;
  what << (scatter ? "reducescatter " : "reduce ") << TypeName(t) << " " << OpName(op)
       << " count " << count << " root " << root << " (seed " << seed << "): " << bad
       << " elements differ from the host path, first at " << first;
  return what.str();
}

std::string ReadOwnLog() {
  std::ifstream f(OwnLogPath());
  std::stringstream text;
  text << f.rdbuf();
  return text.str();
}

RankSpec Spec(int n, const char* direct, bool sync = false) {
  RankSpec spec;
  spec.nranks = n;
  spec.env = {{"SIEVE_GPU_DIRECT", direct},
              {"SIEVE_GPU_CHUNK_BYTES", "4096"},
              {"SIEVE_GPU_SYNC", sync ? "1" : "0"},
              {"SIEVE_TIMEOUT", "60"},
              {"SIEVE_DEBUG", "INFO"},
              {"SIEVE_DEBUG_SUBSYS", "INIT"},
              {"SIEVE_DEBUG_FILE", "/tmp/sieve-direct-test-%p.log"}};
  return spec;
}

// Every dtype x op, in and out of place, random odd sizes, and a few large
// buffers (several ring segments): bit-identical to the host path, 0 bytes staged.
int DirectMatchesHost(int rank, int n, const sieveUniqueId& id) {
  RemoveOwnLog remove_log;
  ScopedFakeRuntime rt;
  FakeMemory mem(&rt);
  sieveComm_t comm = nullptr;
  RANK_CHECK(sieveCommInitRank(&comm, n, id, rank) == sieveSuccess, "init: %s",
             sieveGetLastError(nullptr));
  const uint64_t seed = SharedSeed(comm, rank);
  RANK_CHECK(seed != 0, "seed broadcast: %s", sieveGetLastError(comm));
  std::mt19937_64 sizes(seed);  // the same sizes on every rank
  const size_t staged_before = rt.ops.bytes_to_host.load() + rt.ops.bytes_to_device.load();
  uint64_t case_seed = seed;
  for (sieveDataType_t t : kTypes)
    for (sieveRedOp_t op : kOps)
      for (bool in_place : {false, true}) {
        size_t count = 1 + 2 * (sizes() % 12000);
        std::string e = OneCase(comm, rank, n, mem, t, op, count, in_place, ++case_seed);
        RANK_CHECK(e.empty(), "%s", e.c_str());
      }
  for (sieveDataType_t t : {sieveFloat32, sieveFloat64, sieveBfloat16}) {
    size_t count = 300001 + 2 * (sizes() % 1000);
    std::string e = OneCase(comm, rank, n, mem, t, sieveSum, count, true, ++case_seed);
    RANK_CHECK(e.empty(), "%s", e.c_str());
  }
  for (bool gather : {false, true})
    for (sieveDataType_t t : {sieveInt8, sieveFloat16, sieveUint32, sieveFloat64})
      for (bool in_place : {false, true}) {
        size_t count = 1 + 2 * (sizes() % (gather ? 20000 : 150000));
        int root = static_cast<int>(sizes() % static_cast<uint64_t>(n));
        std::string e = MoveCase(comm, rank, n, mem, gather, t, count, in_place, root,
                                 ++case_seed);
        RANK_CHECK(e.empty(), "%s", e.c_str());
      }
  for (bool scatter : {false, true})
    for (sieveDataType_t t : {sieveFloat32, sieveFloat64, sieveBfloat16})
      for (sieveRedOp_t op : {sieveSum, sieveAvg, sieveMax}) {
        size_t count = 1 + 2 * (sizes() % (scatter ? 30000 : 100000));
        int root = static_cast<int>(sizes() % static_cast<uint64_t>(n));
        std::string e = ReduceCase(comm, rank, n, mem, scatter, t, op, count, root, ++case_seed);
        RANK_CHECK(e.empty(), "%s", e.c_str());
      }
  const size_t staged = rt.ops.bytes_to_host.load() + rt.ops.bytes_to_device.load() - staged_before;
  RANK_CHECK(staged == 0, "the direct path staged %zu bytes", staged);
  RANK_CHECK(rt.ops.reduces.load() > 0, "no device reduction was launched");
  RANK_CHECK(rt.ops.device_copies.load() > 0, "own blocks were not copied on the device");
  RANK_CHECK(rt.ops.streams_created.load() == 1, "%d engine streams created (one expected)",
             rt.ops.streams_created.load());
  const std::string log = ReadOwnLog();
  RANK_CHECK(log.find("device buffers: direct") != std::string::npos &&
                 log.find("SIEVE_GPU_DIRECT=FORCE") != std::string::npos,
             "no INFO line naming the direct path and why; log:\n%s", log.c_str());
  RANK_CHECK(sieveCommDestroy(comm) == sieveSuccess, "destroy");
  RANK_CHECK(rt.ops.streams_destroyed.load() == 1, "the engine stream was not destroyed");
  return 0;
}

TEST(DeviceDirectFakeMp, TwoRanksMatchTheHostPathBitForBit) {
  EXPECT_EQ(RunRanks(Spec(2, "FORCE"), DirectMatchesHost), "");
}
TEST(DeviceDirectFakeMp, ThreeRanksTreeAndRingMatchTheHostPath) {
  EXPECT_EQ(RunRanks(Spec(3, "FORCE"), DirectMatchesHost), "");
}
TEST(DeviceDirectFakeMp, FourRanksBlockingPathMatchesTheHostPath) {
  EXPECT_EQ(RunRanks(Spec(4, "FORCE", /*sync=*/true), DirectMatchesHost), "");
}

// NCCL stream semantics on the direct path: the call returns while the stream
// is behind, the buffer is untouched until the stream reaches the operation,
// later work on the stream sees the result. The compressed modes stay staged.
int DirectKeepsStreamOrder(int rank, int n, const sieveUniqueId& id) {
  RemoveOwnLog remove_log;
  ScopedFakeRuntime rt;
  FakeMemory mem(&rt);
  sieveComm_t comm = nullptr;
  RANK_CHECK(sieveCommInitRank(&comm, n, id, rank) == sieveSuccess, "init");
  const size_t count = 70001;
  std::vector<double> in(count), after(count, 0), want(count);
  for (size_t i = 0; i < count; ++i) in[i] = (rank + 1) * 0.25 + static_cast<double>(i % 977);
  RANK_CHECK(sieveAllReduce(in.data(), want.data(), count, sieveFloat64, sieveAvg, comm,
                            nullptr) == sieveSuccess, "host: %s", sieveGetLastError(comm));
  double* d = static_cast<double*>(mem.Alloc(count * 8));
  mem.Upload(d, in.data(), count * 8);
  mem.fake_stream().Pause(true);
  RANK_CHECK(sieveAllReduce(d, d, count, sieveFloat64, sieveAvg, comm, mem.stream()) ==
                 sieveSuccess, "%s", sieveGetLastError(comm));
  mem.fake_stream().Push([&] {
    std::memcpy(after.data(), d, count * 8);
    return true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  RANK_CHECK(std::memcmp(d, in.data(), count * 8) == 0,
             "the device buffer changed before the stream reached the all-reduce");
  mem.fake_stream().Pause(false);
  mem.Synchronize();
  RANK_CHECK(std::memcmp(after.data(), want.data(), count * 8) == 0,
             "later stream work did not see the host path's result");
  RANK_CHECK(rt.ops.divides.load() > 0, "avg without a device division");
  // Dense ternary is still staged (its scales and 2-bit wire), through the
  // same progress engine.
  std::vector<float> g(count), host_t(count), dev_t(count);
  for (size_t i = 0; i < count; ++i) g[i] = static_cast<float>((i * 7 + rank) % 13) - 6.0f;
  sieveTernaryParams_t p = {};
  p.seed = 3;
  RANK_CHECK(sieveAllReduceTernary(g.data(), host_t.data(), count, sieveFloat32, sieveSum, &p,
                                   comm, nullptr) == sieveSuccess, "host ternary: %s",
             sieveGetLastError(comm));
  float* dg = static_cast<float*>(mem.Alloc(count * 4));
  mem.Upload(dg, g.data(), count * 4);
  const size_t staged_before = rt.ops.bytes_to_host.load();
  RANK_CHECK(sieveAllReduceTernary(dg, dg, count, sieveFloat32, sieveSum, &p, comm,
                                   mem.stream()) == sieveSuccess, "device ternary: %s",
             sieveGetLastError(comm));
  mem.Synchronize();
  mem.Download(dev_t.data(), dg, count * 4);
  RANK_CHECK(dev_t == host_t, "device ternary differs from the host path");
  RANK_CHECK(rt.ops.bytes_to_host.load() > staged_before, "the ternary all-reduce staged nothing");
  RANK_CHECK(sieveCommDestroy(comm) == sieveSuccess, "destroy");
  return 0;
}

TEST(DeviceDirectFakeMp, CallReturnsBeforeTheStreamAndLaterWorkSeesTheResult) {
  EXPECT_EQ(RunRanks(Spec(2, "FORCE"), DirectKeepsStreamOrder), "");
}

// A device reduction failing on rank 1 mid-ring: every rank's communicator
// reports the failure (async, as NCCL), none reports success, nobody hangs.
int KernelFailureFailsEveryRank(int rank, int n, const sieveUniqueId& id) {
  RemoveOwnLog remove_log;
  ScopedFakeRuntime rt;
  FakeMemory mem(&rt);
  sieveComm_t comm = nullptr;
  RANK_CHECK(sieveCommInitRank(&comm, n, id, rank) == sieveSuccess, "init");
  const size_t count = 100001;
  std::vector<float> in(count, 1.0f + rank);
  float* d = static_cast<float*>(mem.Alloc(count * 4));
  mem.Upload(d, in.data(), count * 4);
  if (rank == 1) rt.ops.fail_reduce_after = 2;
  RANK_CHECK(sieveAllReduce(d, d, count, sieveFloat32, sieveSum, comm, mem.stream()) ==
                 sieveSuccess, "enqueue: %s", sieveGetLastError(comm));
  mem.Synchronize();  // the stream is released after the failure too
  sieveResult_t async = sieveSuccess;
  RANK_CHECK(sieveCommGetAsyncError(comm, &async) == sieveSuccess, "poll");
  RANK_CHECK(async != sieveSuccess && async != sieveInProgress,
             "rank %d: the collective reported success after a device failure", rank);
  const std::string msg = sieveGetLastError(comm);
  RANK_CHECK(rank != 1 || msg.find("injected failure") != std::string::npos,
             "the failing rank's error does not say what failed: %s", msg.c_str());
  sieveCommAbort(comm);
  return 0;
}

TEST(DeviceDirectFakeMp, AFailingDeviceKernelFailsTheCollectiveOnEveryRank) {
  EXPECT_EQ(RunRanks(Spec(3, "FORCE"), KernelFailureFailsEveryRank), "");
}

// A dense call queued behind ternary calls that teach the rate runs what the rate
// learned by then chooses (the LAN tree rule: a 40 KB call on 3 ranks, ring before
// anything was learned, tree after; every rank measures 8 Gbit/s, injected so that a
// loaded host cannot change it), while its scratch was reserved at enqueue, before any
// of them ran: the reservation covers the ring and the tree both
// (plan::DenseFlatCandidates). The stream is paused until every call is queued.
int QueuedBehindLearning(int rank, int n, const sieveUniqueId& id) {
  RemoveOwnLog remove_log;
  ScopedFakeRuntime rt;
  FakeMemory mem(&rt);
  sieveComm_t comm = nullptr;
  RANK_CHECK(sieveCommInitRank(&comm, n, id, rank) == sieveSuccess, "init");
  sieve::Comm* impl = nullptr;
  RANK_CHECK(sieve::CheckComm(comm, &impl).ok(), "no communicator");
  impl->State<sieve::plan::LinkRate>().SetMeasuredForTest(1e9);
  const size_t tcount = 140001, dcount = 10000;
  std::vector<float> g(tcount), x(dcount), out(dcount);
  for (size_t i = 0; i < tcount; ++i) g[i] = static_cast<float>((i * 7 + rank) % 13) - 6.0f;
  for (size_t i = 0; i < dcount; ++i) x[i] = static_cast<float>(rank + 1 + i % 5);
  float* dg = static_cast<float*>(mem.Alloc(tcount * 4));
  float* dx = static_cast<float*>(mem.Alloc(dcount * 4));
  mem.Upload(dg, g.data(), tcount * 4);
  mem.Upload(dx, x.data(), dcount * 4);
  mem.fake_stream().Pause(true);
  sieveTernaryParams_t p = {};
  p.seed = 5;
  for (uint64_t step = 0; step < 4; ++step) {
    p.step = step;
    RANK_CHECK(sieveAllReduceTernary(dg, dg, tcount, sieveFloat32, sieveSum, &p, comm,
                                     mem.stream()) == sieveSuccess,
               "ternary %d: %s", static_cast<int>(step), sieveGetLastError(comm));
  }
  RANK_CHECK(
      sieveAllReduce(dx, dx, dcount, sieveFloat32, sieveSum, comm, mem.stream()) == sieveSuccess,
      "dense: %s", sieveGetLastError(comm));
  mem.fake_stream().Pause(false);
  mem.Synchronize();
  sieveResult_t async = sieveSuccess;
  RANK_CHECK(sieveCommGetAsyncError(comm, &async) == sieveSuccess, "poll");
  RANK_CHECK(async == sieveSuccess, "rank %d: %s", rank, sieveGetLastError(comm));
  mem.Download(out.data(), dx, dcount * 4);
  for (size_t i = 0; i < dcount; ++i) {
    const float want = static_cast<float>(n * (n + 1) / 2 + n * static_cast<int>(i % 5));
    RANK_CHECK(out[i] == want, "element %zu: %g, want %g", i, out[i], want);
  }
  const std::string log = ReadOwnLog();
  RANK_CHECK(log.find("allreduce of 40000 bytes on 3 ranks: tree") != std::string::npos &&
                 log.find("rate learned by this communicator") != std::string::npos,
             "the dense call did not take the tree at the learned rate; log:\n%s", log.c_str());
  RANK_CHECK(sieveCommDestroy(comm) == sieveSuccess, "destroy");
  return 0;
}

TEST(DeviceDirectFakeMp, ScratchCoversWhatTheLearnedRateChooses) {
  RankSpec spec = Spec(3, "FORCE");
  for (auto& kv : spec.env)
    if (kv.first == "SIEVE_DEBUG_SUBSYS") kv.second = "INIT,COLL";
  EXPECT_EQ(RunRanks(spec, QueuedBehindLearning), "");
  // SIEVE_ALGO=FLAT takes the same LAN rule.
  spec.env.push_back({"SIEVE_ALGO", "FLAT"});
  EXPECT_EQ(RunRanks(spec, QueuedBehindLearning), "");
}

// AUTO follows UCX's CUDA support (none over Debian's UCX: staged; a CUDA UCX:
// direct), 0 always stages; the INFO line says which and why.
int ChoiceFollowsTheSetting(int rank, int n, const sieveUniqueId& id) {
  RemoveOwnLog remove_log;
  ScopedFakeRuntime rt;
  FakeMemory mem(&rt);
  sieveComm_t comm = nullptr;
  RANK_CHECK(sieveCommInitRank(&comm, n, id, rank) == sieveSuccess, "init");
  const size_t count = 10001;
  std::vector<float> in(count, 0.5f + rank), out(count);
  float* d = static_cast<float*>(mem.Alloc(count * 4));
  mem.Upload(d, in.data(), count * 4);
  RANK_CHECK(sieveAllReduce(d, d, count, sieveFloat32, sieveMax, comm, mem.stream()) ==
                 sieveSuccess, "%s", sieveGetLastError(comm));
  mem.Synchronize();
  mem.Download(out.data(), d, count * 4);
  for (float v : out) RANK_CHECK(v == 0.5f + (n - 1), "max gave %g", v);
  const std::string log = ReadOwnLog();
  const std::string setting = std::getenv("SIEVE_GPU_DIRECT");
  const bool direct = log.find("device buffers: direct") != std::string::npos;
  const bool staged = log.find("device buffers: staged") != std::string::npos;
  RANK_CHECK(direct != staged, "no INFO line on the path; log:\n%s", log.c_str());
  if (setting == "0")
    RANK_CHECK(staged && log.find("SIEVE_GPU_DIRECT=0") != std::string::npos, "0 not staged");
  else
    RANK_CHECK(direct == (log.find("UCX supports CUDA memory") != std::string::npos),
               "AUTO did not follow UCX's CUDA support; log:\n%s", log.c_str());
  const size_t staged_bytes = rt.ops.bytes_to_host.load();
  RANK_CHECK(direct ? staged_bytes == 0 : staged_bytes == count * 4,
             "%zu bytes staged on the %s path", staged_bytes, direct ? "direct" : "staged");
  RANK_CHECK(sieveCommDestroy(comm) == sieveSuccess, "destroy");
  return 0;
}

TEST(DeviceDirectFakeMp, AutoFollowsUcxAndZeroStages) {
  EXPECT_EQ(RunRanks(Spec(2, "AUTO"), ChoiceFollowsTheSetting), "");
  EXPECT_EQ(RunRanks(Spec(2, "0"), ChoiceFollowsTheSetting), "");
}

// Everything the GPU run checks, with every dense collective direct (the
// all-reduce's reference then runs whole: chunk_bytes SIZE_MAX).
int AllChecksDirect(int rank, int n, const sieveUniqueId& id) {
  RemoveOwnLog remove_log;
  ScopedFakeRuntime rt;
  FakeMemory mem(&rt);
  sieveComm_t comm = nullptr;
  RANK_CHECK(sieveCommInitRank(&comm, n, id, rank) == sieveSuccess, "init");
  std::string e = RunDeviceChecks(comm, rank, n, SIZE_MAX, mem);
  RANK_CHECK(e.empty(), "%s", e.c_str());
  RANK_CHECK(sieveCommDestroy(comm) == sieveSuccess, "destroy");
  return 0;
}

TEST(DeviceDirectFakeMp, EveryDeviceCheckPassesOnTheDirectPath) {
  EXPECT_EQ(RunRanks(Spec(3, "FORCE"), AllChecksDirect), "");
}

// What reached UCX, from the UCX transport's TRACE lines (the request
// parameters it posts) between byte offsets [from, to) of this rank's log:
// data messages of the operations' channels and control messages
// (fingerprints, verdicts) counted by whether they match `data_says` and
// "host buffer, memory type host". "" or what is wrong.
std::string CheckMemoryTypes(const std::string& log, size_t from, size_t to,
                             const char* data_says) {
  size_t data = 0;
  std::string wrong;
  for (size_t pos = from; pos < to;) {
    size_t eol = log.find('\n', pos);
    if (eol == std::string::npos || eol > to) eol = to;
    const std::string line = log.substr(pos, eol - pos);
    pos = eol + 1;
    const size_t at = line.find(" tag 0x");
    if (line.find("UCX s") == std::string::npos && line.find("UCX r") == std::string::npos) continue;
    if (at == std::string::npos) continue;
    const uint64_t tag = std::strtoull(line.c_str() + at + 7, nullptr, 16);
    const bool control = (tag & ((1u << sieve::transport::kTagIndexBits) - 1)) >=
                             sieve::transport::kVerdictIndex ||
                         (tag & sieve::transport::kNoticeTagMask) ==
                             (sieve::transport::NoticeTag(0) & sieve::transport::kNoticeTagMask);
    const char* want = control ? "host buffer, memory type host" : data_says;
    if (line.find(want) == std::string::npos && wrong.empty())
      wrong = "expected \"" + std::string(want) + "\" in: " + line;
    data += control ? 0 : 1;
  }
  if (!wrong.empty()) return wrong;
  return data == 0 ? "no data message in the log" : "";
}

// Every direct collective (the ring and the tree all-reduce, the chains'
// broadcast and reduce, the rings' all-gather and reduce-scatter) posts its
// data to UCX as device memory (its type left to UCX's detection) and its
// control messages as host memory; the host path's data stays host.
int DirectDataIsDeviceMemoryToUcx(int rank, int n, const sieveUniqueId& id) {
  RemoveOwnLog remove_log;
  ScopedFakeRuntime rt;
  FakeMemory mem(&rt);
  sieveComm_t comm = nullptr;
  RANK_CHECK(sieveCommInitRank(&comm, n, id, rank) == sieveSuccess, "init");
  const size_t large = 50001, small = 101;  // ring and tree all-reduce (3 ranks)
  std::vector<float> host(large * n, 1.0f + rank);
  float* d_in = static_cast<float*>(mem.Alloc(large * n * 4));
  float* d_out = static_cast<float*>(mem.Alloc(large * n * 4));
  mem.Upload(d_in, host.data(), large * n * 4);
  const size_t device_from = ReadOwnLog().size();
  for (size_t count : {large, small})
    RANK_CHECK(sieveAllReduce(d_in, d_out, count, sieveFloat32, sieveSum, comm, mem.stream()) ==
                   sieveSuccess, "%s", sieveGetLastError(comm));
  RANK_CHECK(sieveBroadcast(d_in, d_out, large, sieveFloat32, 1, comm, mem.stream()) ==
                 sieveSuccess, "%s", sieveGetLastError(comm));
  RANK_CHECK(sieveReduce(d_in, d_out, large, sieveFloat32, sieveMax, 2, comm, mem.stream()) ==
                 sieveSuccess, "%s", sieveGetLastError(comm));
  RANK_CHECK(sieveAllGather(d_in, d_out, small, sieveFloat32, comm, mem.stream()) == sieveSuccess,
             "%s", sieveGetLastError(comm));
  RANK_CHECK(sieveReduceScatter(d_in, d_out, large, sieveFloat32, sieveSum, comm, mem.stream()) ==
                 sieveSuccess, "%s", sieveGetLastError(comm));
  mem.Synchronize();
  const size_t host_from = ReadOwnLog().size();
  RANK_CHECK(sieveAllReduce(host.data(), host.data(), large, sieveFloat32, sieveSum, comm,
                            nullptr) == sieveSuccess, "%s", sieveGetLastError(comm));
  const std::string log = ReadOwnLog();
  std::string e = CheckMemoryTypes(log, device_from, host_from,
                                   "device buffer, memory type detected by UCX");
  RANK_CHECK(e.empty(), "direct path: %s", e.c_str());
  e = CheckMemoryTypes(log, host_from, log.size(), "host buffer, memory type host");
  RANK_CHECK(e.empty(), "host path: %s", e.c_str());
  RANK_CHECK(sieveCommDestroy(comm) == sieveSuccess, "destroy");
  return 0;
}

TEST(DeviceDirectFakeMp, DirectPathTellsTheTransportItsBuffersAreDeviceMemory) {
  RankSpec spec = Spec(3, "FORCE");
  for (auto& kv : spec.env) {
    if (kv.first == "SIEVE_DEBUG") kv.second = "TRACE";
    if (kv.first == "SIEVE_DEBUG_SUBSYS") kv.second = "NET";
  }
  EXPECT_EQ(RunRanks(spec, DirectDataIsDeviceMemoryToUcx), "");
}

}  // namespace
}  // namespace sieve_test
