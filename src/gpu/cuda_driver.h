// The CUDA driver, loaded at run time with dlopen: a table of the functions
// the GPU path calls. No CUDA library is linked into libsieve, so a machine
// without a driver runs the library unchanged (every pointer is then host).
#ifndef SIEVE_GPU_CUDA_DRIVER_H_
#define SIEVE_GPU_CUDA_DRIVER_H_

#include <string>

#include "gpu/cuda_abi.h"

namespace sieve::gpu {

struct CudaDriver {
  cu::Result (*Init)(unsigned flags) = nullptr;
  cu::Result (*DriverGetVersion)(int* version) = nullptr;
  cu::Result (*GetErrorString)(cu::Result error, const char** str) = nullptr;
  cu::Result (*DeviceGetCount)(int* count) = nullptr;
  cu::Result (*PointerGetAttribute)(void* data, int attribute, cu::DevicePtr ptr) = nullptr;
  cu::Result (*CtxGetCurrent)(cu::Context* ctx) = nullptr;
  cu::Result (*MemHostAlloc)(void** host, size_t bytes, unsigned flags) = nullptr;
  cu::Result (*MemFreeHost)(void* host) = nullptr;
  cu::Result (*MemHostGetDevicePointer)(cu::DevicePtr* dev, void* host, unsigned flags) = nullptr;
  cu::Result (*MemcpyDtoHAsync)(void* dst, cu::DevicePtr src, size_t bytes,
                                cu::Stream stream) = nullptr;
  cu::Result (*MemcpyHtoDAsync)(cu::DevicePtr dst, const void* src, size_t bytes,
                                cu::Stream stream) = nullptr;
  cu::Result (*StreamWaitValue32)(cu::Stream stream, cu::DevicePtr addr, uint32_t value,
                                  unsigned flags) = nullptr;
  cu::Result (*StreamWriteValue32)(cu::Stream stream, cu::DevicePtr addr, uint32_t value,
                                   unsigned flags) = nullptr;
  cu::Result (*StreamSynchronize)(cu::Stream stream) = nullptr;
  cu::Result (*MemHostRegister)(void* host, size_t bytes, unsigned flags) = nullptr;
  cu::Result (*MemHostUnregister)(void* host) = nullptr;
  // For the embedded kernels (kernel_image.h); optional: a driver without them
  // still runs the staged paths, and `kernels_missing` names the first absent.
  cu::Result (*ModuleLoadData)(cu::Module* module, const void* image) = nullptr;
  cu::Result (*ModuleGetFunction)(cu::Function* fn, cu::Module module, const char* name) = nullptr;
  cu::Result (*LaunchKernel)(cu::Function fn, unsigned grid_x, unsigned grid_y, unsigned grid_z,
                             unsigned block_x, unsigned block_y, unsigned block_z,
                             unsigned shared_bytes, cu::Stream stream, void** params,
                             void** extra) = nullptr;
  cu::Result (*MemAllocAsync)(cu::DevicePtr* ptr, size_t bytes, cu::Stream stream) = nullptr;
  cu::Result (*MemFreeAsync)(cu::DevicePtr ptr, cu::Stream stream) = nullptr;
  cu::Result (*CtxPushCurrent)(cu::Context ctx) = nullptr;
  cu::Result (*CtxPopCurrent)(cu::Context* ctx) = nullptr;
  // The direct path's own stream and device-to-device copies (kernels_missing too).
  cu::Result (*StreamCreate)(cu::Stream* stream, unsigned flags) = nullptr;
  cu::Result (*StreamDestroy)(cu::Stream stream) = nullptr;
  cu::Result (*MemcpyDtoDAsync)(cu::DevicePtr dst, cu::DevicePtr src, size_t bytes,
                                cu::Stream stream) = nullptr;
  // Plain device allocations for memory UCX sees (the direct path's scratch).
  cu::Result (*MemAlloc)(cu::DevicePtr* ptr, size_t bytes) = nullptr;
  cu::Result (*MemFree)(cu::DevicePtr ptr) = nullptr;
  // The device of a context and whether it has memory pools (before
  // cuMemAllocAsync); events order stream-ordered memory across streams.
  cu::Result (*CtxGetDevice)(cu::Device* device) = nullptr;
  cu::Result (*DeviceGetAttribute)(int* value, int attribute, cu::Device device) = nullptr;
  cu::Result (*EventCreate)(cu::Event* event, unsigned flags) = nullptr;
  cu::Result (*EventRecord)(cu::Event event, cu::Stream stream) = nullptr;
  cu::Result (*StreamWaitEvent)(cu::Stream stream, cu::Event event, unsigned flags) = nullptr;
  cu::Result (*EventDestroy)(cu::Event event) = nullptr;
  std::string kernels_missing;

  int driver_version = 0;  // e.g. 13000, filled by LoadCudaDriver
  int device_count = 0;

  // "cuMemHostAlloc: out of memory (2)": the call's name and the driver's words.
  std::string ErrorText(const char* call, cu::Result r) const;
};

// dlopens `library` (normally "libcuda.so.1"), resolves every entry of the
// table by its exported (versioned) name, and initializes the driver. On any
// failure returns false with `why` saying what was missing; nothing stays loaded.
bool LoadCudaDriver(const char* library, CudaDriver* out, std::string* why);

}  // namespace sieve::gpu

#endif  // SIEVE_GPU_CUDA_DRIVER_H_
