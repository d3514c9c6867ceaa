// DeviceOps on the CUDA driver: pinned mapped memory, async copies,
// cuStreamWriteValue32 / cuStreamWaitValue32 on the handshake words, and the
// embedded kernels (kernel_module.h) launched with cuLaunchKernel.
#ifndef SIEVE_GPU_CUDA_DEVICE_OPS_H_
#define SIEVE_GPU_CUDA_DEVICE_OPS_H_

#include <map>
#include <mutex>

#include "gpu/cuda_driver.h"
#include "gpu/device_ops.h"
#include "gpu/kernel_module.h"

namespace sieve::gpu {

class CudaDeviceOps : public DeviceOps {
 public:
  explicit CudaDeviceOps(const CudaDriver* driver) : d_(driver), module_(driver) {}

  Status AllocPinned(size_t bytes, void** host) override;
  void FreePinned(void* host) override;
  Status RegisterPinned(void* host, size_t bytes) override;
  void UnregisterPinned(void* host) override;
  Status CopyToHost(void* host, const void* device, size_t bytes, cu::Stream stream) override;
  Status CopyToDevice(void* device, const void* host, size_t bytes, cu::Stream stream) override;
  Status WriteFlag(cu::Stream stream, uint32_t* word, uint32_t value) override;
  Status WaitFlag(cu::Stream stream, uint32_t* word, uint32_t value) override;
  Status Synchronize(cu::Stream stream) override;
  bool HasStreamMemOps() const override;
  bool HasKernels(std::string* why) const override { return module_.Available(why); }
  Status PrepareKernels() override;
  bool HasMemoryPools(std::string* why) override;
  Status AllocDevice(size_t bytes, cu::Stream stream, void** device) override;
  Status FreeDevice(void* device, cu::Stream stream) override;
  Status OrderAfter(cu::Stream later, cu::Stream earlier) override;
  Status AllocDeviceBlock(size_t bytes, void** device) override;
  Status FreeDeviceBlock(void* device) override;
  Status MaskedPack(size_t elem_size, const void* in, const uint32_t* idx, size_t nnz, void* out,
                    cu::Stream stream) override;
  Status MaskedUnpack(size_t elem_size, const void* packed, const uint32_t* idx, size_t nnz,
                      const uint64_t* bits, size_t count, void* out, cu::Stream stream) override;
  Status NonzeroBitmap(size_t elem_size, const void* data, size_t count, uint64_t* bits,
                       cu::Stream stream) override;
  Status AnyNonzeroOutside(size_t elem_size, const void* data, const uint64_t* mask, size_t count,
                           uint32_t* any, cu::Stream stream) override;
  Status TernaryAbsMax(kernels::DType dtype, const void* in, const float* residual, size_t count,
                       size_t block, float* scales, cu::Stream stream) override;
  Status TernaryQuantize(kernels::DType dtype, const void* in, size_t count, size_t block,
                         const float* scales, kernels::PhiloxStream rng, int levels, void* wire,
                         cu::Stream stream) override;
  Status TernaryFeedbackApply(kernels::DType dtype, const void* g, float* residual, bool fresh,
                              void* out, size_t count, cu::Stream stream) override;
  Status TernaryQuantizeFeedback(kernels::DType dtype, const void* in, size_t count, size_t block,
                                 const float* scales, kernels::PhiloxStream rng, int levels,
                                 void* wire, float* residual, cu::Stream stream) override;
  Status TernaryDequantize(kernels::DType dtype, const void* wire, int w, size_t count,
                           size_t block, const float* scales, int divisor, void* out,
                           cu::Stream stream) override;
  Status TernaryDequantizeScatter(kernels::DType dtype, const void* wire, int w, size_t nnz,
                                  size_t block, const float* scales, int divisor,
                                  const uint32_t* idx, const uint64_t* bits, size_t count,
                                  void* out, cu::Stream stream) override;
  Status BlockQuantEncode(kernels::DType dtype, const void* in, size_t count, int bits, void* out,
                          cu::Stream stream) override;
  Status BlockQuantDecode(kernels::DType dtype, const void* in, size_t count, int bits, void* out,
                          cu::Stream stream) override;
  Status Reduce(kernels::DType dtype, kernels::RedOp op, const void* a, const void* b, void* out,
                size_t n, cu::Stream stream) override;
  Status DivideBy(kernels::DType dtype, void* buf, size_t n, int divisor,
                  cu::Stream stream) override;
  Status CopyDevice(void* dst, const void* src, size_t bytes, cu::Stream stream) override;
  Status CreateStream(cu::Stream* out) override;
  Status DestroyStream(cu::Stream stream) override;
  Status CurrentContext(cu::Context* out) override;
  Status CurrentDevice(int* ordinal) override;
  Status PushContext(cu::Context ctx) override;
  Status PopContext() override;

 private:
  Status Check(const char* call, cu::Result r) const;
  Status CheckContext() const;
  // Refuses a call that may synchronize the device on a progress thread
  // (gpu/thread_role.h): there it could wait for a stream parked on that thread.
  Status CheckNotProgressThread(const char* call) const;
  // Records the device address of a new pinned allocation (undone by `undo` on failure).
  Status Map(void* host, size_t bytes, cu::Result (*undo)(void*));
  // The device address of a word inside one of our pinned allocations.
  Status DeviceAddress(const void* host, cu::DevicePtr* out);

  // Launches fn over `elems` work items (grid-stride kernels; 256 threads a block).
  Status Launch(const char* name, cu::Function fn, size_t elems, void** params,
                cu::Stream stream);
  // Launches one warp per 64-element bitmap word of `count` elements.
  Status LaunchWords(const char* name, cu::Function fn, size_t count, void** params,
                     cu::Stream stream);
  // Launches exactly `blocks` blocks of 256 threads (one block per scale block).
  Status LaunchBlocks(const char* name, cu::Function fn, size_t blocks, void** params,
                      cu::Stream stream);
  Status TernaryFunctions(kernels::DType dtype, const KernelFunctions** fns, int* index);
  // The block-scaled encode or decode entry of dtype over `count` elements.
  Status LaunchBlockQuant(bool encode, kernels::DType dtype, const void* in, size_t count,
                          int bits, void* out, cu::Stream stream);
  Status Functions(size_t elem_size, const KernelFunctions** fns, int* index);

  const CudaDriver* d_;
  KernelModule module_;
  std::mutex mu_;
  struct Mapping {
    size_t bytes;
    cu::DevicePtr device;
  };
  std::map<const char*, Mapping> mapped_;  // by host base address
  // The context each device allocation was made in: a free may come from a
  // thread with no current context (the last owner of a mask's device copy).
  std::map<cu::DevicePtr, cu::Context> device_ctx_;
  std::map<cu::Device, bool> pools_;  // CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED, by device
};

}  // namespace sieve::gpu

#endif  // SIEVE_GPU_CUDA_DEVICE_OPS_H_
