// A fake CUDA device for host-only tests of the GPU path: "device memory" is
// host memory in registered arenas, and each stream is a host thread running
// its queued operations in order (copies, flag writes, flag waits), so the
// stream/progress-thread handshake runs for real, only without a GPU.
//
// It is strict where the driver is unforgiving (each breach is recorded as a
// violation, the call fails, and the fake aborts at destruction if a test did
// not take its violations):
// * a context is per thread: a call on a thread with no current context fails;
// * a call that may synchronize the device (plain device or pinned
//   allocation and free, a module load, synchronizing a parked stream) on a
//   thread that writes handshake words (gpu/thread_role.h) while a stream is
//   parked on such a word is a deadlock;
// * stream-ordered memory (AllocDevice) used on a stream other than the one it
//   was last used on, with no OrderAfter (an event) between, is a race;
// * kernels launch only in a context the module was loaded into: the first
//   launch in a context loads it (lazily, as CUDA does), which counts as a
//   module load above.
#ifndef SIEVE_TESTS_SUPPORT_FAKE_DEVICE_H_
#define SIEVE_TESTS_SUPPORT_FAKE_DEVICE_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
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
  // A flag wait: later operations wait until (int32_t)(*word - value) >= 0.
  void PushWait(const uint32_t* word, uint32_t value);
  // Whether the next operation is a flag wait that is not satisfied.
  bool Parked() const;
  // A live stream (`only`, or any) that is parked now, or nullptr.
  static void* AnyParked(FakeStream* only = nullptr);
  // Blocks until every queued operation ran (cuStreamSynchronize).
  void Drain();
  // A paused stream runs nothing (a GPU busy with earlier kernels).
  void Pause(bool paused);
  size_t pending() const;
  CUstream_st* handle() { return reinterpret_cast<CUstream_st*>(this); }

 private:
  struct Op {
    std::function<bool()> run;
    const uint32_t* wait_word = nullptr;  // a flag wait
    uint32_t wait_value = 0;
  };
  void Loop();
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Op> ops_;
  bool paused_ = false, stop_ = false, busy_ = false;
  std::thread thread_;
};

class FakeDeviceOps : public sieve::gpu::DeviceOps {
 public:
  // Makes the constructing thread current on device 0's context (undone by
  // the destructor); other threads call ScopedContext or PushContext.
  FakeDeviceOps();
  // Frees what the code under test deliberately leaked (memory a stream still
  // owed), so sanitizer builds see no leak; streams must be gone by then.
  // Aborts, listing them, if violations were recorded and not taken.
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
  sieve::Status PrepareKernels() override;
  bool HasMemoryPools(std::string* why) override;
  sieve::Status AllocDevice(size_t bytes, CUstream_st* stream, void** device) override;
  sieve::Status FreeDevice(void* device, CUstream_st* stream) override;
  sieve::Status OrderAfter(CUstream_st* later, CUstream_st* earlier) override;
  sieve::Status AllocDeviceBlock(size_t bytes, void** device) override;
  sieve::Status FreeDeviceBlock(void* device) override;
  sieve::Status MaskedPack(size_t elem_size, const void* in, const uint32_t* idx, size_t nnz,
                           void* out, CUstream_st* stream) override;
  sieve::Status MaskedUnpack(size_t elem_size, const void* packed, const uint32_t* idx,
                             size_t nnz, const uint64_t* bits, size_t count, void* out,
                             CUstream_st* stream) override;
  // The CPU block-scaled kernels (kernels/block_quant.h) on the stream's thread.
  sieve::Status BlockQuantEncode(sieve::kernels::DType dtype, const void* in, size_t count,
                                 int bits, void* out, CUstream_st* stream) override;
  sieve::Status BlockQuantDecode(sieve::kernels::DType dtype, const void* in, size_t count,
                                 int bits, void* out, CUstream_st* stream) override;
  // The CPU ternary kernels (kernels/ternary.h), dense, on the stream's thread.
  sieve::Status TernaryAbsMax(sieve::kernels::DType dtype, const void* in, const float* residual,
                              size_t count, size_t block, float* scales,
                              CUstream_st* stream) override;
  sieve::Status TernaryQuantize(sieve::kernels::DType dtype, const void* in, size_t count,
                                size_t block, const float* scales,
                                sieve::kernels::PhiloxStream rng, int levels, void* wire,
                                CUstream_st* stream) override;
  // Error feedback: the CPU kernels (kernels/ternary_feedback.h); a fresh
  // residual is zeroed first (device scratch starts as junk here).
  sieve::Status TernaryFeedbackApply(sieve::kernels::DType dtype, const void* g, float* residual,
                                     bool fresh, void* out, size_t count,
                                     CUstream_st* stream) override;
  sieve::Status TernaryQuantizeFeedback(sieve::kernels::DType dtype, const void* in, size_t count,
                                        size_t block, const float* scales,
                                        sieve::kernels::PhiloxStream rng, int levels,
                                        void* wire, float* residual,
                                        CUstream_st* stream) override;
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
  sieve::Status CurrentContext(CUctx_st** out) override;
  sieve::Status CurrentDevice(int* ordinal) override;
  sieve::Status PushContext(CUctx_st* ctx) override;
  sieve::Status PopContext() override;

  // The context of `device` (one per device, made on first use).
  CUctx_st* ContextOf(int device);
  // Makes `device`'s context current on the calling thread for its scope.
  class ScopedContext {
   public:
    explicit ScopedContext(FakeDeviceOps& ops, int device = 0);
    ~ScopedContext();
    ScopedContext(const ScopedContext&) = delete;
    ScopedContext& operator=(const ScopedContext&) = delete;

   private:
    FakeDeviceOps& ops_;
  };

  // What the code under test did that the driver would not forgive (and
  // clears the record). Each also failed its call.
  std::vector<std::string> TakeViolations();

  FakeStream* StreamOf(CUstream_st* s) {
    return s != nullptr ? reinterpret_cast<FakeStream*>(s) : &default_stream;
  }

  bool mem_ops = true;
  bool kernels = true;  // false: a libsieve built without device kernels
  bool memory_pools = true;  // false: CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED is 0
  // Bytes the streams copied device -> pinned host (what was staged), and the
  // kernels launched.
  std::atomic<size_t> bytes_to_host{0}, bytes_to_device{0};
  std::atomic<int> packs{0}, unpacks{0}, ternary_absmax{0}, ternary_quantize{0},
      ternary_dequantize{0}, ternary_feedback_apply{0}, ternary_quantize_feedback{0},
      ternary_dequantize_scatter{0}, block_quant_encodes{0}, block_quant_decodes{0};
  // Device scratch currently allocated and not yet freed by a stream.
  size_t device_live() {
    std::lock_guard<std::mutex> lock(mu_);
    return device_live_.size();
  }
  std::atomic<int> reduces{0}, divides{0}, device_copies{0}, streams_created{0},
      streams_destroyed{0}, module_loads{0}, events{0};
  // > 0: the n-th Reduce from now fails (a device kernel failing mid-collective).
  std::atomic<int> fail_reduce_after{0};
  // > 0: the n-th CopyToHost from now fails (enqueue error injection).
  std::atomic<int> fail_copy_in_after{0};
  std::atomic<int> flag_ops{0}, syncs{0}, allocs{0}, frees{0};
  std::atomic<int> registers{0}, unregisters{0};
  bool fail_register = false;  // RegisterPinned fails (as a driver refusing the area)
  FakeStream default_stream;

 private:
  struct Context {
    int device;
  };
  // Stream-ordered memory: the last use on each stream (a global order number).
  struct PoolAllocation {
    size_t bytes;
    std::map<FakeStream*, uint64_t> uses;
  };

  sieve::Status Violation(const std::string& what);
  // The calling thread's context, or a violation naming `call`.
  sieve::Status RequireContext(const char* call);
  // `call` may synchronize the device: a deadlock if this thread writes the
  // word a parked stream waits for (only `stream` when given).
  sieve::Status CheckNoDeadlock(const char* call, FakeStream* stream = nullptr);
  // A kernel launch: a context, the module loaded there (lazily on first use),
  // and each stream-ordered allocation among `ptrs` ordered on `stream`.
  sieve::Status Launch(const char* call, CUstream_st* stream,
                       std::initializer_list<const void*> ptrs);
  // Records a use of the stream-ordered allocations among `ptrs` on `stream`.
  sieve::Status UseOn(const char* call, CUstream_st* stream,
                      std::initializer_list<const void*> ptrs);
  sieve::Status UseLocked(const char* call, FakeStream* s, const void* p);  // REQUIRES: mu_

  std::mutex mu_;
  std::deque<Context> contexts_;  // stable addresses: the CUctx_st* handles
  std::set<CUctx_st*> loaded_;     // contexts the module was loaded into
  std::set<void*> live_;
  std::set<void*> device_live_;  // scratch not yet freed by a stream
  std::set<void*> registered_;
  std::set<FakeStream*> own_streams_;  // CreateStream's, not yet destroyed
  std::map<const char*, PoolAllocation> pool_;  // AllocDevice's, by base address
  // clock_[s][u]: work queued on stream s after this is ordered after stream
  // u's work up to that number (OrderAfter, transitively).
  std::map<FakeStream*, std::map<FakeStream*, uint64_t>> clock_;
  uint64_t order_ = 0;
  std::vector<std::string> violations_;
};

// "Device" pointers are those inside the registered arenas.
class FakeClassifier : public sieve::gpu::PointerClassifier {
 public:
  sieve::gpu::MemoryKind Classify(const void* ptr) const override;
  int DeviceOf(const void* ptr) const override;
  void AddArena(const void* base, size_t bytes, int device = 0);

 private:
  struct Arena {
    size_t bytes;
    int device;
  };
  const Arena* Find(const void* ptr) const;  // REQUIRES: mu_
  mutable std::mutex mu_;
  std::map<const char*, Arena> arenas_;
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
