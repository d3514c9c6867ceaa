// Loading the CUDA driver once per process.
#include "gpu/gpu_runtime.h"

#include <cstdlib>
#include <mutex>

#include "core/log.h"
#include "gpu/cuda_device_ops.h"

namespace sieve::gpu {

namespace {

class HostOnlyClassifier : public PointerClassifier {
 public:
  MemoryKind Classify(const void*) const override { return MemoryKind::kHost; }
};

const GpuRuntime* g_test_runtime = nullptr;

const GpuRuntime& LoadRuntime() {
  static GpuRuntime runtime;
  static CudaDriver driver;
  static HostOnlyClassifier host_only;
  static std::once_flag once;
  std::call_once(once, [] {
    std::string why;
    runtime.classifier = &host_only;
    // Read once, as the driver reads it when it creates a context.
    if (const char* v = std::getenv("CUDA_DEVICE_MAX_CONNECTIONS")) runtime.max_connections = std::atoi(v);
    if (!LoadCudaDriver("libcuda.so.1", &driver, &why)) {
      runtime.description = why;
      SIEVE_INFO(kLogInit, "no CUDA: %s; every buffer is treated as host memory", why.c_str());
      return;
    }
    static DriverClassifier classifier(&driver);
    static CudaDeviceOps ops(&driver);
    runtime.available = true;
    runtime.classifier = &classifier;
    runtime.ops = &ops;
    std::string no_kernels;
    bool kernels = ops.HasKernels(&no_kernels);
    runtime.description = StrFormat(
        "CUDA driver %d, %d device(s), stream memory operations %s, device kernels %s",
        driver.driver_version, driver.device_count,
        ops.HasStreamMemOps() ? "yes" : "no (blocking path)",
        kernels ? "yes" : ("no: " + no_kernels).c_str());
    SIEVE_INFO(kLogInit, "%s: device buffers are detected per call", runtime.description.c_str());
  });
  return runtime;
}

}  // namespace

const GpuRuntime& Runtime() {
  if (g_test_runtime != nullptr) return *g_test_runtime;
  return LoadRuntime();
}

void SetRuntimeForTest(const GpuRuntime* fake) { g_test_runtime = fake; }

}  // namespace sieve::gpu
