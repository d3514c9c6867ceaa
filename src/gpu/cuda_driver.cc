// dlopen of the CUDA driver and its function table.
#include "gpu/cuda_driver.h"

#include <dlfcn.h>

#include "core/status.h"

namespace sieve::gpu {

namespace {

// Resolves one symbol into a typed function pointer; records the first miss.
template <typename Fn>
void Resolve(void* lib, const char* name, Fn* fn, std::string* missing) {
  *fn = reinterpret_cast<Fn>(dlsym(lib, name));
  if (*fn == nullptr && missing->empty()) *missing = name;
}

}  // namespace

std::string CudaDriver::ErrorText(const char* call, cu::Result r) const {
  const char* text = nullptr;
  if (GetErrorString == nullptr || GetErrorString(r, &text) != cu::kSuccess || text == nullptr)
    text = "unknown CUDA error";
  return StrFormat("%s: %s (%d)", call, text, r);
}

bool LoadCudaDriver(const char* library, CudaDriver* out, std::string* why) {
  // RTLD_NOW: a driver lacking a symbol fails here, not in the middle of a call.
  void* lib = dlopen(library, RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    const char* err = dlerror();
    *why = StrFormat("cannot load %s (%s)", library, err != nullptr ? err : "not found");
    return false;
  }
  CudaDriver d;
  std::string missing;
  // The exported names carry the ABI version that cuda.h maps the API names to.
  Resolve(lib, "cuInit", &d.Init, &missing);
  Resolve(lib, "cuDriverGetVersion", &d.DriverGetVersion, &missing);
  Resolve(lib, "cuGetErrorString", &d.GetErrorString, &missing);
  Resolve(lib, "cuDeviceGetCount", &d.DeviceGetCount, &missing);
  Resolve(lib, "cuPointerGetAttribute", &d.PointerGetAttribute, &missing);
  Resolve(lib, "cuCtxGetCurrent", &d.CtxGetCurrent, &missing);
  Resolve(lib, "cuMemHostAlloc", &d.MemHostAlloc, &missing);
  Resolve(lib, "cuMemFreeHost", &d.MemFreeHost, &missing);
  Resolve(lib, "cuMemHostGetDevicePointer_v2", &d.MemHostGetDevicePointer, &missing);
  Resolve(lib, "cuMemcpyDtoHAsync_v2", &d.MemcpyDtoHAsync, &missing);
  Resolve(lib, "cuMemcpyHtoDAsync_v2", &d.MemcpyHtoDAsync, &missing);
  Resolve(lib, "cuStreamWaitValue32_v2", &d.StreamWaitValue32, &missing);
  Resolve(lib, "cuStreamWriteValue32_v2", &d.StreamWriteValue32, &missing);
  Resolve(lib, "cuStreamSynchronize", &d.StreamSynchronize, &missing);
  Resolve(lib, "cuMemHostRegister_v2", &d.MemHostRegister, &missing);
  Resolve(lib, "cuMemHostUnregister", &d.MemHostUnregister, &missing);
  Resolve(lib, "cuModuleLoadData", &d.ModuleLoadData, &d.kernels_missing);
  Resolve(lib, "cuModuleGetFunction", &d.ModuleGetFunction, &d.kernels_missing);
  Resolve(lib, "cuLaunchKernel", &d.LaunchKernel, &d.kernels_missing);
  Resolve(lib, "cuMemAllocAsync", &d.MemAllocAsync, &d.kernels_missing);
  Resolve(lib, "cuMemFreeAsync", &d.MemFreeAsync, &d.kernels_missing);
  Resolve(lib, "cuCtxPushCurrent_v2", &d.CtxPushCurrent, &d.kernels_missing);
  Resolve(lib, "cuCtxPopCurrent_v2", &d.CtxPopCurrent, &d.kernels_missing);
  Resolve(lib, "cuStreamCreate", &d.StreamCreate, &d.kernels_missing);
  Resolve(lib, "cuStreamDestroy_v2", &d.StreamDestroy, &d.kernels_missing);
  Resolve(lib, "cuMemcpyDtoDAsync_v2", &d.MemcpyDtoDAsync, &d.kernels_missing);
  Resolve(lib, "cuMemAlloc_v2", &d.MemAlloc, &d.kernels_missing);
  Resolve(lib, "cuMemFree_v2", &d.MemFree, &d.kernels_missing);
  Resolve(lib, "cuCtxGetDevice", &d.CtxGetDevice, &d.kernels_missing);
  Resolve(lib, "cuDeviceGetAttribute", &d.DeviceGetAttribute, &d.kernels_missing);
  Resolve(lib, "cuEventCreate", &d.EventCreate, &d.kernels_missing);
  Resolve(lib, "cuEventRecord", &d.EventRecord, &d.kernels_missing);
  Resolve(lib, "cuStreamWaitEvent", &d.StreamWaitEvent, &d.kernels_missing);
  Resolve(lib, "cuEventDestroy_v2", &d.EventDestroy, &d.kernels_missing);
  if (!missing.empty()) {
    *why = StrFormat("%s lacks %s (driver too old?)", library, missing.c_str());
    dlclose(lib);
    return false;
  }
  cu::Result r = d.Init(0);
  if (r == cu::kSuccess) r = d.DriverGetVersion(&d.driver_version);
  if (r == cu::kSuccess) r = d.DeviceGetCount(&d.device_count);
  if (r != cu::kSuccess || d.device_count == 0) {
    *why = r != cu::kSuccess ? d.ErrorText("cuInit", r) : std::string("no CUDA device");
    dlclose(lib);
    return false;
  }
  *out = d;  // the library stays loaded for the life of the process
  return true;
}

}  // namespace sieve::gpu
