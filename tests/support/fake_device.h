// A fake CUDA device for host-only tests of the GPU path: "device memory" is
// host memory in registered arenas, and each stream is a host thread running
// its queued operations in order (copies, flag writes, flag waits), so the
// stream/progress-thread handshake runs for real, only without a GPU.
#ifndef SIEVE_TESTS_SUPPORT_FAKE_DEVICE_H_
#define SIEVE_TESTS_SUPPORT_FAKE_DEVICE_H_

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "gpu/device_ops.h"
#include "gpu/gpu_runtime.h"
#include "gpu/memory_kind.h"

namespace sieve_test {

// One in-order queue with its own thread. An operation returns false while it
// must wait (a flag wait), and is retried.
class FakeStream {
 public:
  FakeStream();
  ~FakeStream();
  void Push(std::function<bool()> op);
  // Blocks until every queued operation ran (cuStreamSynchronize).
  void Drain();
  // A paused stream runs nothing (a GPU busy with earlier kernels).
  void Pause(bool paused);
  size_t pending() const;
  CUstream_st* handle() { return reinterpret_cast<CUstream_st*>(this); }

 private:
  void Loop();
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<bool()>> ops_;
  bool paused_ = false, stop_ = false, busy_ = false;
  std::thread thread_;
};

class FakeDeviceOps : public sieve::gpu::DeviceOps {
 public:
  // `default_stream` serves the NULL stream.
  FakeDeviceOps() = default;
  // Frees what the code under test deliberately leaked (memory a stream still
  // owed), so sanitizer builds see no leak; streams must be gone by then.
  ~FakeDeviceOps() override;
  sieve::Status AllocPinned(size_t bytes, void** host) override;
  void FreePinned(void* host) override;
  sieve::Status RegisterPinned(void* host, size_t bytes) override;
  void UnregisterPinned(void* host) override;
  sieve::Status CopyToHost(void* host, const void* device, size_t bytes,
                           CUstream_st* stream) override;
  sieve::Status CopyToDevice(void* device, const void* host, size_t bytes,
                             CUstream_st* stream) override;
  sieve::Status WriteFlag(CUstream_st* stream, uint32_t* word, uint32_t value) override;
  sieve::Status WaitFlag(CUstream_st* stream, uint32_t* word, uint32_t value) override;
  sieve::Status Synchronize(CUstream_st* stream) override;
  bool HasStreamMemOps() const override { return mem_ops; }
  // Kernels run on the stream's thread with the CPU kernels (kernels/masked_pack.h).
  bool HasKernels(std::string* why) const override;
  sieve::Status AllocDevice(size_t bytes, CUstream_st* stream, void** device) override;
  sieve::Status FreeDevice(void* device, CUstream_st* stream) override;
  sieve::Status AllocDeviceBlock(size_t bytes, void** device) override;
  sieve::Status FreeDeviceBlock(void* device) override;
  sieve::Status MaskedPack(size_t elem_size, const void* in, const uint32_t* idx, size_t nnz,
                           void* out, CUstream_st* stream) override;
  sieve::Status MaskedUnpack(size_t elem_size, const void* packed, const uint32_t* idx,
                             size_t nnz, const uint64_t* bits, size_t count, void* out,
                             CUstream_st* stream) override;
  // The CPU ternary kernels (kernels/ternary.h), dense, on the stream's thread.
  sieve::Status TernaryAbsMax(sieve::kernels::DType dtype, const void* in, size_t count,
                              size_t block, float* scales, CUstream_st* stream) override;
  sieve::Status TernaryQuantize(sieve::kernels::DType dtype, const void* in, size_t count,
                                size_t block, const float* scales,
                                sieve::kernels::PhiloxStream rng, void* wire,
                                CUstream_st* stream) override;
  // Error feedback: the CPU kernels (kernels/ternary_feedback.h); a fresh
  // residual is zeroed first (device scratch starts as junk here).
  sieve::Status TernaryFeedbackApply(sieve::kernels::DType dtype, const void* g, float* residual,
                                     bool fresh, void* out, size_t count,
                                     CUstream_st* stream) override;
  sieve::Status TernaryQuantizeFeedback(sieve::kernels::DType dtype, const void* in, size_t count,
                                        size_t block, const float* scales,
                                        sieve::kernels::PhiloxStream rng, void* wire,
                                        float* residual, CUstream_st* stream) override;
  // The host path's TernaryDequantizeScatter on the unpacked sums.
  sieve::Status TernaryDequantizeScatter(sieve::kernels::DType dtype, const void* wire, int w,
                                         size_t nnz, size_t block, const float* scales,
                                         int divisor, const uint32_t* idx, const uint64_t* bits,
                                         size_t count, void* out, CUstream_st* stream) override;
  sieve::Status TernaryDequantize(sieve::kernels::DType dtype, const void* wire, int w,
                                  size_t count, size_t block, const float* scales, int divisor,
                                  void* out, CUstream_st* stream) override;

  // The direct path: the CPU reductions (kernels/reduce.h) and copies on the
  // stream's thread, and streams of the fake's own.
  sieve::Status Reduce(sieve::kernels::DType dtype, sieve::kernels::RedOp op, const void* a,
                       const void* b, void* out, size_t n, CUstream_st* stream) override;
  sieve::Status DivideBy(sieve::kernels::DType dtype, void* buf, size_t n, int divisor,
                         CUstream_st* stream) override;
  sieve::Status CopyDevice(void* dst, const void* src, size_t bytes,
                           CUstream_st* stream) override;
  sieve::Status CreateStream(CUstream_st** out) override;
  sieve::Status DestroyStream(CUstream_st* stream) override;

  FakeStream* StreamOf(CUstream_st* s) {
    return s != nullptr ? reinterpret_cast<FakeStream*>(s) : &default_stream;
  }

  bool mem_ops = true;
  bool kernels = true;  // false: a libsieve built without device kernels
  // Bytes the streams copied device -> pinned host (what was staged), and the
  // kernels launched.
  std::atomic<size_t> bytes_to_host{0}, bytes_to_device{0};
  std::atomic<int> packs{0}, unpacks{0}, ternary_absmax{0}, ternary_quantize{0},
      ternary_dequantize{0}, ternary_feedback_apply{0}, ternary_quantize_feedback{0},
      ternary_dequantize_scatter{0};
  // Device scratch currently allocated and not yet freed by a stream.
  size_t device_live() {
    std::lock_guard<std::mutex> lock(mu_);
    return device_live_.size();
  }
  std::atomic<int> reduces{0}, divides{0}, device_copies{0}, streams_created{0},
      streams_destroyed{0};
  // > 0: the n-th Reduce from now fails (a device kernel failing mid-collective).
  std::atomic<int> fail_reduce_after{0};
  // > 0: the n-th CopyToHost from now fails (enqueue error injection).
  std::atomic<int> fail_copy_in_after{0};
  std::atomic<int> flag_ops{0}, syncs{0}, allocs{0}, frees{0};
  std::atomic<int> registers{0}, unregisters{0};
  bool fail_register = false;  // RegisterPinned fails (as a driver refusing the area)
  FakeStream default_stream;

 private:
  std::mutex mu_;
  std::set<void*> live_;
  std::set<void*> device_live_;  // scratch not yet freed by a stream
  std::set<void*> registered_;
  std::set<FakeStream*> own_streams_;  // CreateStream's, not yet destroyed
};

// "Device" pointers are those inside the registered arenas.
class FakeClassifier : public sieve::gpu::PointerClassifier {
 public:
  sieve::gpu::MemoryKind Classify(const void* ptr) const override;
  void AddArena(const void* base, size_t bytes);

 private:
  mutable std::mutex mu_;
  std::map<const char*, size_t> arenas_;
};

// Installs a runtime made of the fakes for the life of the object.
class ScopedFakeRuntime {
 public:
  ScopedFakeRuntime();
  ~ScopedFakeRuntime();
  FakeDeviceOps ops;
  FakeClassifier classifier;

 private:
  sieve::gpu::GpuRuntime runtime_;
};

}  // namespace sieve_test

#endif  // SIEVE_TESTS_SUPPORT_FAKE_DEVICE_H_
