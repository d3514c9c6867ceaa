// DeviceOps through the dlopen'd driver table.
#include "gpu/cuda_device_ops.h"

namespace sieve::gpu {

Status CudaDeviceOps::Check(const char* call, cu::Result r) const {
  if (r == cu::kSuccess) return Status::OK();
  return Status::CudaError(d_->ErrorText(call, r));
}

Status CudaDeviceOps::AllocPinned(size_t bytes, void** host) {
  cu::Context ctx = nullptr;
  SIEVE_RETURN_IF_ERROR(Check("cuCtxGetCurrent", d_->CtxGetCurrent(&ctx)));
  if (ctx == nullptr)
    return Status::CudaError(
        "no CUDA context is current on the calling thread; select the device of the buffers "
        "(cudaSetDevice) before a collective on device memory");
  // Portable: usable from every context; device-mapped: the stream's memory
  // operations and copies address it directly.
  SIEVE_RETURN_IF_ERROR(Check(
      "cuMemHostAlloc",
      d_->MemHostAlloc(host, bytes, cu::kMemHostAllocPortable | cu::kMemHostAllocDeviceMap)));
  cu::DevicePtr device = 0;
  Status st = Check("cuMemHostGetDevicePointer", d_->MemHostGetDevicePointer(&device, *host, 0));
  if (!st.ok()) {
    d_->MemFreeHost(*host);
    return st;
  }
  std::lock_guard<std::mutex> lock(mu_);
  mapped_[static_cast<const char*>(*host)] = {bytes, device};
  return Status::OK();
}

void CudaDeviceOps::FreePinned(void* host) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    mapped_.erase(static_cast<const char*>(host));
  }
  d_->MemFreeHost(host);
}

Status CudaDeviceOps::DeviceAddress(const void* host, cu::DevicePtr* out) {
  const char* p = static_cast<const char*>(host);
  std::lock_guard<std::mutex> lock(mu_);
  auto it = mapped_.upper_bound(p);
  if (it == mapped_.begin())
    return Status::Internal("handshake word outside the pinned staging memory");
  --it;
  size_t offset = static_cast<size_t>(p - it->first);
  if (offset >= it->second.bytes)
    return Status::Internal("handshake word outside the pinned staging memory");
  *out = it->second.device + offset;
  return Status::OK();
}

Status CudaDeviceOps::CopyToHost(void* host, const void* device, size_t bytes,
                                 cu::Stream stream) {
  return Check("cuMemcpyDtoHAsync",
               d_->MemcpyDtoHAsync(host, reinterpret_cast<cu::DevicePtr>(device), bytes, stream));
}

Status CudaDeviceOps::CopyToDevice(void* device, const void* host, size_t bytes,
                                   cu::Stream stream) {
  return Check("cuMemcpyHtoDAsync",
               d_->MemcpyHtoDAsync(reinterpret_cast<cu::DevicePtr>(device), host, bytes, stream));
}

Status CudaDeviceOps::WriteFlag(cu::Stream stream, uint32_t* word, uint32_t value) {
  cu::DevicePtr addr = 0;
  SIEVE_RETURN_IF_ERROR(DeviceAddress(word, &addr));
  // Default flags: the write is ordered after all earlier work on the stream
  // and fenced, so the host sees the staged bytes before the word.
  return Check("cuStreamWriteValue32",
               d_->StreamWriteValue32(stream, addr, value, cu::kStreamWriteValueDefault));
}

Status CudaDeviceOps::WaitFlag(cu::Stream stream, uint32_t* word, uint32_t value) {
  cu::DevicePtr addr = 0;
  SIEVE_RETURN_IF_ERROR(DeviceAddress(word, &addr));
  return Check("cuStreamWaitValue32",
               d_->StreamWaitValue32(stream, addr, value, cu::kStreamWaitValueGeq));
}

Status CudaDeviceOps::Synchronize(cu::Stream stream) {
  return Check("cuStreamSynchronize", d_->StreamSynchronize(stream));
}

bool CudaDeviceOps::HasStreamMemOps() const {
  return d_->driver_version >= cu::kStreamMemOpsMinDriver;
}

}  // namespace sieve::gpu
