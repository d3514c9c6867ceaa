// What the GPU path asks of a device: pinned memory, copies and flag
// operations enqueued on a stream. CudaDeviceOps implements it with the
// driver; tests implement it with a fake stream that runs on a host thread.
#ifndef SIEVE_GPU_DEVICE_OPS_H_
#define SIEVE_GPU_DEVICE_OPS_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "core/status.h"
#include "gpu/cuda_abi.h"
#include "kernels/dtype.h"
#include "kernels/philox.h"

namespace sieve::gpu {

class DeviceOps {
 public:
  virtual ~DeviceOps() = default;

  // Host memory the device can read and write (pinned, mapped): staging data
  // and the handshake words live there. Needs a current context on the caller.
  virtual Status AllocPinned(size_t bytes, void** host) = 0;
  virtual void FreePinned(void* host) = 0;
  // The same for host memory the caller allocated (staging first placed on a
  // NUMA node): pins and device-maps [host, host+bytes). UnregisterPinned
  // undoes it before the caller frees the memory. A device that cannot
  // register says so; the caller then uses AllocPinned.
  virtual Status RegisterPinned(void* host, size_t bytes) {
    (void)host;
    (void)bytes;
    return Status::CudaError("this device cannot register host memory");
  }
  virtual void UnregisterPinned(void* host) { (void)host; }

  // Enqueued on `stream` behind everything queued before; return once queued.
  virtual Status CopyToHost(void* host, const void* device, size_t bytes, cu::Stream stream) = 0;
  virtual Status CopyToDevice(void* device, const void* host, size_t bytes,
                              cu::Stream stream) = 0;
  // When the stream reaches this point (all earlier work done and visible),
  // it stores `value` into the pinned word `word`.
  virtual Status WriteFlag(cu::Stream stream, uint32_t* word, uint32_t value) = 0;
  // Later work on the stream waits until (int32_t)(*word - value) >= 0; the
  // host is not blocked.
  virtual Status WaitFlag(cu::Stream stream, uint32_t* word, uint32_t value) = 0;
  // Blocks the calling thread until the stream is idle (the SIEVE_GPU_SYNC path).
  virtual Status Synchronize(cu::Stream stream) = 0;
  // Whether WaitFlag/WriteFlag work on this driver (else: the blocking path).
  virtual bool HasStreamMemOps() const = 0;

  // Device kernels (masked pack/unpack) and device scratch, all enqueued on a
  // stream. Not every DeviceOps has them (a libsieve built without nvcc):
  // HasKernels() says so, and `why` says why not; callers then stage whole buffers.
  virtual bool HasKernels(std::string* why) const {
    *why = "this device backend has no kernels";
    return false;
  }
  // Loads the kernels into the calling thread's current context: the module
  // and every entry point (with CUDA's lazy loading, the lookup is what loads
  // a kernel, and loading may synchronize the device). Called on the caller's
  // thread before any stream of Sieve is parked on the context's first
  // device call; a launch in a context never prepared loads there lazily,
  // which the progress thread must never do (gpu/thread_role.h).
  virtual Status PrepareKernels();
  // Whether AllocDevice works for the current context's device
  // (CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED); else `why`.
  virtual bool HasMemoryPools(std::string* why) {
    *why = "this device backend has no stream-ordered memory";
    return false;
  }
  // Stream-ordered device memory: usable by work queued on `stream` after the
  // call; FreeDevice releases it once the stream's earlier work is done, and
  // never synchronizes (so any thread may free it). Used on another stream
  // only after OrderAfter(other, last stream it was used on).
  virtual Status AllocDevice(size_t bytes, cu::Stream stream, void** device);
  virtual Status FreeDevice(void* device, cu::Stream stream);
  // Work queued on `later` from now on starts after all the work queued on
  // `earlier` so far (an event recorded there and waited for): what makes
  // stream-ordered memory and its contents safe to use on `later`.
  virtual Status OrderAfter(cu::Stream later, cu::Stream earlier);
  // Plain (not stream-ordered) device memory in the current context, usable
  // at once: what the transport may be handed (UCX releases differ in how
  // they detect stream-ordered pool memory). Both may synchronize the
  // device: callers keep blocks for reuse, and never call either on a
  // progress thread (gpu/thread_role.h).
  virtual Status AllocDeviceBlock(size_t bytes, void** device);
  virtual Status FreeDeviceBlock(void* device);
  // out[k] = in[idx[k]], k < nnz (kernels::MaskedPack on the device).
  virtual Status MaskedPack(size_t elem_size, const void* in, const uint32_t* idx, size_t nnz,
                            void* out, cu::Stream stream);
  // out[idx[k]] = packed[k]; out[j] = 0 where bit j of `bits` is clear, j < count.
  virtual Status MaskedUnpack(size_t elem_size, const void* packed, const uint32_t* idx,
                              size_t nnz, const uint64_t* bits, size_t count, void* out,
                              cu::Stream stream);
  // Zero patterns (kernels/nonzero.h) of `count` elements of device memory
  // `data`: bits (device memory, ceil(count/64) words) = kernels::NonzeroBitmap.
  virtual Status NonzeroBitmap(size_t elem_size, const void* data, size_t count, uint64_t* bits,
                               cu::Stream stream);
  // The device word *any = 1 if kernels::AnyNonzeroOutside(elem_size, data,
  // mask, count), else 0 (`mask` in device memory too).
  virtual Status AnyNonzeroOutside(size_t elem_size, const void* data, const uint64_t* mask,
                                   size_t count, uint32_t* any, cu::Stream stream);
  // Dense ternary (float32/float16/bfloat16), kernels::TernaryAbsMax and
  // kernels::TernaryQuantizePack over all `count` elements on the device:
  // scales[b] = max |in| of block b, NaN where `residual` (error feedback's, one
  // float per element; may be null) is NaN at the block's first element
  // (kernels::TernaryPoisonedBits); wire = the codes at `levels` levels (1:
  // ternary) of this rank's Philox stream `rng` against the agreed `scales`, in
  // TernaryBits(levels) bits each.
  virtual Status TernaryAbsMax(kernels::DType dtype, const void* in, const float* residual,
                               size_t count, size_t block, float* scales, cu::Stream stream);
  virtual Status TernaryQuantize(kernels::DType dtype, const void* in, size_t count,
                                 size_t block, const float* scales, kernels::PhiloxStream rng,
                                 int levels, void* wire, cu::Stream stream);
  // Error feedback (kernels/ternary_feedback.h) on the device; `residual`
  // holds one float per element, in device memory.
  // out = g + e_prev rounded to dtype, residual = that sum in float32; `fresh`:
  // the residual is new and counts as zeros (it is not read).
  virtual Status TernaryFeedbackApply(kernels::DType dtype, const void* g, float* residual,
                                      bool fresh, void* out, size_t count, cu::Stream stream);
  // TernaryQuantize of `in` (the sum sent), and in the same pass the residual
  // update residual[j] -= s_b * q[j] / levels (kernels::TernaryFeedbackUpdate).
  virtual Status TernaryQuantizeFeedback(kernels::DType dtype, const void* in, size_t count,
                                         size_t block, const float* scales,
                                         kernels::PhiloxStream rng, int levels, void* wire,
                                         float* residual, cu::Stream stream);
  // out[j] = s_b * Q[j] (/ divisor) in dtype, Q the final sums packed in `w`
  // bits each (kernels::TernaryUnpack, then kernels::TernaryDequantizeRange).
  virtual Status TernaryDequantize(kernels::DType dtype, const void* wire, int w, size_t count,
                                   size_t block, const float* scales, int divisor, void* out,
                                   cu::Stream stream);
  // The same for the nnz kept elements of a mask, scattered: out[idx[k]] =
  // s_b * Q[k] (/ divisor), out[j] = 0 where bit j of `bits` is clear, j <
  // count (kernels::TernaryUnpack, then kernels::TernaryDequantizeScatter).
  virtual Status TernaryDequantizeScatter(kernels::DType dtype, const void* wire, int w,
                                          size_t nnz, size_t block, const float* scales,
                                          int divisor, const uint32_t* idx,
                                          const uint64_t* bits, size_t count, void* out,
                                          cu::Stream stream);
  // Block-scaled integers (float32/float16/bfloat16; kernels/block_quant.h) on
  // the device: `out` = the encoding of `count` elements of `in` at `bits` (8 or
  // 4), BlockQuantBytes(count, bits) bytes; decode: `count` elements of `in`'s
  // encoding into `out`.
  virtual Status BlockQuantEncode(kernels::DType dtype, const void* in, size_t count, int bits,
                                  void* out, cu::Stream stream);
  virtual Status BlockQuantDecode(kernels::DType dtype, const void* in, size_t count, int bits,
                                  void* out, cu::Stream stream);

  // The direct path (gpu/direct_collectives.h): dense reductions on device
  // memory, run by the progress thread on a stream of its own, in the
  // context of the calling thread.
  // out[i] = a[i] op b[i], i < n (kernels::Reduce on the device; out may alias a or b).
  virtual Status Reduce(kernels::DType dtype, kernels::RedOp op, const void* a, const void* b,
                        void* out, size_t n, cu::Stream stream);
  // buf[i] /= divisor (kernels::DivideBy on the device).
  virtual Status DivideBy(kernels::DType dtype, void* buf, size_t n, int divisor,
                          cu::Stream stream);
  // Device-to-device copy, enqueued on `stream`.
  virtual Status CopyDevice(void* dst, const void* src, size_t bytes, cu::Stream stream);
  virtual Status CreateStream(cu::Stream* out);
  virtual Status DestroyStream(cu::Stream stream);
  // The calling thread's current context (nullptr where contexts do not
  // apply), and making one current on another thread around its work.
  virtual Status CurrentContext(cu::Context* out) {
    *out = nullptr;
    return Status::OK();
  }
  // The device ordinal of the calling thread's current context.
  virtual Status CurrentDevice(int* ordinal) {
    *ordinal = 0;
    return Status::OK();
  }
  virtual Status PushContext(cu::Context ctx) {
    (void)ctx;
    return Status::OK();
  }
  virtual Status PopContext() { return Status::OK(); }
};

// The handshake words, read and written by the host with acquire/release
// ordering (the other side is the device, through PCIe).
inline uint32_t LoadWord(const uint32_t* word) { return __atomic_load_n(word, __ATOMIC_ACQUIRE); }
inline void StoreWord(uint32_t* word, uint32_t v) { __atomic_store_n(word, v, __ATOMIC_RELEASE); }
// Generations wrap; as CU_STREAM_WAIT_VALUE_GEQ, `a` has reached `b` when
// (int32_t)(a - b) >= 0.
inline bool Reached(uint32_t a, uint32_t b) { return static_cast<int32_t>(a - b) >= 0; }

}  // namespace sieve::gpu

#endif  // SIEVE_GPU_DEVICE_OPS_H_
