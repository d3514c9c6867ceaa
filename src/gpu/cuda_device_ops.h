// DeviceOps on the CUDA driver: pinned mapped memory, async copies, and
// cuStreamWriteValue32 / cuStreamWaitValue32 on the handshake words.
#ifndef SIEVE_GPU_CUDA_DEVICE_OPS_H_
#define SIEVE_GPU_CUDA_DEVICE_OPS_H_

#include <map>
#include <mutex>

#include "gpu/cuda_driver.h"
#include "gpu/device_ops.h"

namespace sieve::gpu {

class CudaDeviceOps : public DeviceOps {
 public:
  explicit CudaDeviceOps(const CudaDriver* driver) : d_(driver) {}

  Status AllocPinned(size_t bytes, void** host) override;
  void FreePinned(void* host) override;
  Status CopyToHost(void* host, const void* device, size_t bytes, cu::Stream stream) override;
  Status CopyToDevice(void* device, const void* host, size_t bytes, cu::Stream stream) override;
  Status WriteFlag(cu::Stream stream, uint32_t* word, uint32_t value) override;
  Status WaitFlag(cu::Stream stream, uint32_t* word, uint32_t value) override;
  Status Synchronize(cu::Stream stream) override;
  bool HasStreamMemOps() const override;

 private:
  Status Check(const char* call, cu::Result r) const;
  // The device address of a word inside one of our pinned allocations.
  Status DeviceAddress(const void* host, cu::DevicePtr* out);

  const CudaDriver* d_;
  std::mutex mu_;
  struct Mapping {
    size_t bytes;
    cu::DevicePtr device;
  };
  std::map<const char*, Mapping> mapped_;  // by host base address
};

}  // namespace sieve::gpu

#endif  // SIEVE_GPU_CUDA_DEVICE_OPS_H_
