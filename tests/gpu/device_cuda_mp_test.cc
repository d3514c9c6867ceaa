// Device-buffer collectives on a real GPU (label cuda): 2 and 4 ranks sharing
// GPU 0 run the same checks as the fake-device test, bit for bit against the
// host path, plus a busy stream proving the call only enqueues. Without a GPU
// every test is skipped with "no CUDA device".
#include <gtest/gtest.h>
#include <cuda_runtime.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "gpu/device_checks.h"
#include "gpu/spin_kernel.h"
#include "support/gpu.h"
#include "support/mp_harness.h"

namespace sieve_test {
namespace {

// The ranks are forked: the parent must not initialize CUDA (a CUDA context
// does not survive fork), so the probe runs in a child of its own.
bool GpuPresentWithoutTouchingCuda() {
  pid_t pid = fork();
  if (pid == 0) {
    std::string why;
    _exit(HaveGpu(&why) ? 0 : 1);
  }
  int status = 0;
  return pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
         WEXITSTATUS(status) == 0;
}

#define SKIP_WITHOUT_GPU() \
  if (!GpuPresentWithoutTouchingCuda()) GTEST_SKIP() << "no CUDA device"

class CudaMemory : public DeviceMemory {
 public:
  CudaMemory() {
    cudaSetDevice(0);
    cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking);
  }
  ~CudaMemory() override {
    cudaStreamSynchronize(stream_);
    for (void* p : blocks_) cudaFree(p);
    cudaStreamDestroy(stream_);
  }
  void* Alloc(size_t bytes) override {
    void* p = nullptr;
    if (cudaMalloc(&p, bytes + 64) != cudaSuccess) return nullptr;
    blocks_.push_back(p);
    return p;
  }
  void Upload(void* d, const void* h, size_t bytes) override {
    cudaStreamSynchronize(stream_);
    cudaMemcpy(d, h, bytes, cudaMemcpyHostToDevice);
  }
  void Download(void* h, const void* d, size_t bytes) override {
    cudaStreamSynchronize(stream_);
    cudaMemcpy(h, d, bytes, cudaMemcpyDeviceToHost);
  }
  sieveStream_t stream() override { return stream_; }
  void Synchronize() override { cudaStreamSynchronize(stream_); }

 private:
  cudaStream_t stream_ = nullptr;
  std::vector<void*> blocks_;
};

constexpr size_t kChunk = 256 << 10;

RankSpec Spec(int n, bool sync) {
  RankSpec spec;
  spec.nranks = n;
  // Staged here whatever UCX supports; the direct path has its own test below.
  spec.env = {{"SIEVE_GPU_CHUNK_BYTES", "256k"}, {"SIEVE_GPU_SYNC", sync ? "1" : "0"},
              {"SIEVE_TIMEOUT", "60"}, {"SIEVE_DEBUG", "INFO"}, {"SIEVE_DEBUG_SUBSYS", "INIT"},
              {"SIEVE_GPU_DIRECT", "0"}};
  return spec;
}

// Every device check on `comm` (chunks of `chunk` bytes), no async error
// after them, then destroy: the body of each rank of the check runs.
int ChecksPassThenDestroy(sieveComm_t comm, int rank, int nranks, size_t chunk, CudaMemory& mem) {
  std::string e = RunDeviceChecks(comm, rank, nranks, chunk, mem);
  RANK_CHECK(e.empty(), "%s", e.c_str());
  sieveResult_t async = sieveSuccess;
  RANK_CHECK(sieveCommGetAsyncError(comm, &async) == sieveSuccess && async == sieveSuccess,
             "async error %d: %s", async, sieveGetLastError(comm));
  RANK_CHECK(sieveCommDestroy(comm) == sieveSuccess, "destroy");
  return 0;
}

int AllChecks(int rank, int nranks, const sieveUniqueId& id) {
  CudaMemory mem;
  sieveComm_t comm = nullptr;
  RANK_CHECK(sieveCommInitRank(&comm, nranks, id, rank) == sieveSuccess, "init: %s",
             sieveGetLastError(nullptr));
  return ChecksPassThenDestroy(comm, rank, nranks, kChunk, mem);
}

TEST(DeviceCudaMp, TwoRanksMatchTheHostPath) {
  SKIP_WITHOUT_GPU();
  EXPECT_EQ(RunRanks(Spec(2, false), AllChecks), "");
}
TEST(DeviceCudaMp, FourRanksMatchTheHostPath) {
  SKIP_WITHOUT_GPU();
  EXPECT_EQ(RunRanks(Spec(4, false), AllChecks), "");
}
TEST(DeviceCudaMp, BlockingPathMatchesTheHostPath) {
  SKIP_WITHOUT_GPU();
  EXPECT_EQ(RunRanks(Spec(2, true), AllChecks), "");
}

// The stream is busy for 300 ms when the all-reduce is enqueued: the call must
// return long before that, and the result must be there after a sync.
int ReturnsWhileTheStreamIsBusy(int rank, int nranks, const sieveUniqueId& id) {
  CudaMemory mem;
  sieveComm_t comm = nullptr;
  RANK_CHECK(sieveCommInitRank(&comm, nranks, id, rank) == sieveSuccess, "init");
  const size_t count = (8 << 20) / 4 + 3;
  std::vector<float> in(count), out(count);
  for (size_t i = 0; i < count; ++i) in[i] = static_cast<float>((i % 1000) + rank);
  float* d = static_cast<float*>(mem.Alloc(count * 4));
  mem.Upload(d, in.data(), count * 4);
  // Warm up (engine, staging) so the timed call is a steady-state one.
  RANK_CHECK(sieveAllReduce(d, d, 1, sieveFloat32, sieveMax, comm, mem.stream()) == sieveSuccess,
             "warm-up");
  mem.Synchronize();
  mem.Upload(d, in.data(), count * 4);
  RANK_CHECK(LaunchSpin(mem.stream(), 300ull * 1000 * 1000) == 0, "spin kernel");
  auto t0 = std::chrono::steady_clock::now();
  RANK_CHECK(sieveAllReduce(d, d, count, sieveFloat32, sieveSum, comm, mem.stream()) ==
                 sieveSuccess, "%s", sieveGetLastError(comm));
  double call_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  mem.Synchronize();
  mem.Download(out.data(), d, count * 4);
  float ranks = static_cast<float>(nranks * (nranks - 1) / 2);
  for (size_t i = 0; i < count; ++i)
    RANK_CHECK(out[i] == nranks * static_cast<float>(i % 1000) + ranks, "element %zu: %g", i,
               out[i]);
  std::fprintf(stderr, "[rank %d] all-reduce of %zu floats behind a 300 ms kernel returned in "
               "%.2f ms\n", rank, count, call_ms);
  RANK_CHECK(call_ms < 100, "the call blocked for %.1f ms behind the busy stream", call_ms);
  RANK_CHECK(sieveCommDestroy(comm) == sieveSuccess, "destroy");
  return 0;
}

TEST(DeviceCudaMp, CallReturnsWhileTheStreamIsBusy) {
  SKIP_WITHOUT_GPU();
  EXPECT_EQ(RunRanks(Spec(2, false), ReturnsWhileTheStreamIsBusy), "");
}

// The direct path (SIEVE_GPU_DIRECT=AUTO: device memory handed to UCX,
// reductions by the embedded kernels), where UCX supports CUDA memory: every
// device check, the all-reduce now whole (chunk SIZE_MAX) and bit-identical
// to the host path. Each rank reads its own INFO log to see which path the
// communicator took; a staged one writes the reason to the marker file and
// the test is skipped with it.
std::string ReadFile(const std::string& path) {
  std::ifstream f(path);
  std::stringstream text;
  text << f.rdbuf();
  return text.str();
}

int DirectChecks(int rank, int nranks, const sieveUniqueId& id) {
  CudaMemory mem;
  sieveComm_t comm = nullptr;
  RANK_CHECK(sieveCommInitRank(&comm, nranks, id, rank) == sieveSuccess, "init: %s",
             sieveGetLastError(nullptr));
  // The first device call creates the engine, which logs the path.
  float* d = static_cast<float*>(mem.Alloc(4 * 1001));
  std::vector<float> ones(1001, 1.0f);
  mem.Upload(d, ones.data(), 4 * 1001);
  RANK_CHECK(sieveAllReduce(d, d, 1001, sieveFloat32, sieveSum, comm, mem.stream()) ==
                 sieveSuccess, "%s", sieveGetLastError(comm));
  mem.Synchronize();
  const std::string log_path = "/tmp/sieve-cuda-direct-" + std::to_string(getpid()) + ".log";
  const std::string log = ReadFile(log_path);
  std::remove(log_path.c_str());
  const size_t at = log.find("device buffers: ");
  RANK_CHECK(at != std::string::npos, "no INFO line on the device path; log:\n%s", log.c_str());
  if (log.compare(at, 22, "device buffers: direct") != 0) {
    size_t open = log.find('(', at), close = log.find(')', open);
    if (rank == 0)
      std::ofstream(std::getenv("SIEVE_TEST_DIRECT_MARKER"))
          << log.substr(open + 1, close - open - 1);
    sieveCommDestroy(comm);
    return 0;
  }
  return ChecksPassThenDestroy(comm, rank, nranks, SIZE_MAX, mem);
}

void RunDirect(int n) {
  const std::string marker = "/tmp/sieve-cuda-direct-skip-" + std::to_string(getpid());
  std::remove(marker.c_str());
  RankSpec spec = Spec(n, false);
  for (auto& kv : spec.env)
    if (kv.first == "SIEVE_GPU_DIRECT") kv.second = "AUTO";
  spec.env.push_back({"SIEVE_DEBUG_FILE", "/tmp/sieve-cuda-direct-%p.log"});
  spec.env.push_back({"SIEVE_TEST_DIRECT_MARKER", marker});
  EXPECT_EQ(RunRanks(spec, DirectChecks), "");
  const std::string why = ReadFile(marker);
  std::remove(marker.c_str());
  if (!why.empty()) GTEST_SKIP() << "direct path not taken: " << why;
  std::fprintf(stderr, "direct all-reduce on %d ranks: device memory handed to UCX\n", n);
}

TEST(DeviceCudaMp, DirectAllReduceMatchesTheHostPath) {
  SKIP_WITHOUT_GPU();
  RunDirect(2);
  if (!IsSkipped()) RunDirect(4);
}

// More streams than hardware queues (run with CUDA_DEVICE_MAX_CONNECTIONS=2
// by tests/gpu/run.sh): the caller's parked stream and the progress thread's
// stream then likely share a queue (gpu/direct_path.h says why that may
// deadlock). 32 streams are created first and each gets a kernel, so the
// driver hands out queues round-robin before the communicator's stream.
int DirectWithManyStreams(int rank, int nranks, const sieveUniqueId& id) {
  std::vector<cudaStream_t> extra(32);
  cudaSetDevice(0);
  for (cudaStream_t& s : extra) {
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    RANK_CHECK(LaunchSpin(s, 1000) == 0, "spin kernel");
  }
  int r = DirectChecks(rank, nranks, id);
  for (cudaStream_t s : extra) cudaStreamDestroy(s);
  return r;
}

TEST(DeviceCudaMp, DirectWithStreamsSharingQueues) {
  SKIP_WITHOUT_GPU();
  const std::string marker = "/tmp/sieve-cuda-direct-skip-" + std::to_string(getpid());
  std::remove(marker.c_str());
  RankSpec spec = Spec(2, false);
  for (auto& kv : spec.env)
    if (kv.first == "SIEVE_GPU_DIRECT") kv.second = "AUTO";
  spec.env.push_back({"SIEVE_DEBUG_FILE", "/tmp/sieve-cuda-direct-%p.log"});
  spec.env.push_back({"SIEVE_TEST_DIRECT_MARKER", marker});
  EXPECT_EQ(RunRanks(spec, DirectWithManyStreams), "");
  const std::string why = ReadFile(marker);
  std::remove(marker.c_str());
  if (!why.empty()) GTEST_SKIP() << "direct path not taken: " << why;
}

// A short pass over every device path (for compute-sanitizer in
// tests/gpu/run.sh): dense staged and direct, masked packing, ternary with
// error feedback under a mask; small buffers, 2 ranks, checked against the
// host path.
int ShortPath(int rank, int nranks, const sieveUniqueId& id) {
  CudaMemory mem;
  sieveComm_t comm = nullptr;
  RANK_CHECK(sieveCommInitRank(&comm, nranks, id, rank) == sieveSuccess, "init");
  const size_t count = 4099;
  std::vector<float> in(count), host(count), dev(count);
  for (size_t i = 0; i < count; ++i) in[i] = static_cast<float>((i * 13 + rank) % 17) - 8.0f;
  float* d = static_cast<float*>(mem.Alloc(count * 4));
  float* d_out = static_cast<float*>(mem.Alloc(count * 4));
  std::vector<uint8_t> keep(count);
  for (size_t j = 0; j < count; ++j) keep[j] = j % 3 != 1;
  sieveMask_t mask = nullptr;
  RANK_CHECK(sieveMaskRegister(comm, keep.data(), sieveMaskBytes, count, sieveMaskStrict, &mask) ==
                 sieveSuccess, "mask");
  sieveTernaryParams_t p = {};
  p.seed = 9;
  p.mask = mask;
  p.error_feedback = 1;
  for (int call = 0; call < 3; ++call) {
    mem.Upload(d, in.data(), count * 4);
    sieveResult_t h = sieveSuccess, g = sieveSuccess;
    if (call == 0) {
      h = sieveAllReduce(in.data(), host.data(), count, sieveFloat32, sieveSum, comm, nullptr);
      g = sieveAllReduce(d, d_out, count, sieveFloat32, sieveSum, comm, mem.stream());
    } else if (call == 1) {
      h = sieveAllReduceMasked(in.data(), host.data(), count, sieveFloat32, sieveSum, mask, comm,
                               nullptr);
      g = sieveAllReduceMasked(d, d_out, count, sieveFloat32, sieveSum, mask, comm, mem.stream());
    } else {
      h = sieveAllReduceTernary(in.data(), host.data(), count, sieveFloat32, sieveSum, &p, comm,
                                nullptr);
      g = sieveAllReduceTernary(d, d_out, count, sieveFloat32, sieveSum, &p, comm, mem.stream());
    }
    RANK_CHECK(h == sieveSuccess && g == sieveSuccess, "call %d: %s", call,
               sieveGetLastError(comm));
    mem.Synchronize();
    mem.Download(dev.data(), d_out, count * 4);
    RANK_CHECK(dev == host, "call %d differs from the host path", call);
  }
  RANK_CHECK(sieveMaskDeregister(mask) == sieveSuccess, "deregister");
  RANK_CHECK(sieveCommDestroy(comm) == sieveSuccess, "destroy");
  return 0;
}

TEST(DeviceCudaMp, ShortDevicePath) {
  SKIP_WITHOUT_GPU();
  RankSpec staged = Spec(2, false);
  EXPECT_EQ(RunRanks(staged, ShortPath), "");
  RankSpec direct = Spec(2, false);
  for (auto& kv : direct.env)
    if (kv.first == "SIEVE_GPU_DIRECT") kv.second = "AUTO";  // direct where UCX has CUDA
  EXPECT_EQ(RunRanks(direct, ShortPath), "");
}

}  // namespace
}  // namespace sieve_test
