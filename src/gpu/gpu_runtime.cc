// Loading the CUDA driver once per process.
#include "gpu/gpu_runtime.h"

#include <atomic>
#include <cstdlib>
#include <mutex>

#include "core/log.h"
#include "gpu/cuda_device_ops.h"
#include "plan/memory_kind.h"

namespace sieve::gpu {

namespace {

class HostOnlyClassifier : public PointerClassifier {
 public:
  MemoryKind Classify(const void*) const override { return MemoryKind::kHost; }
};

const GpuRuntime* g_test_runtime = nullptr;
std::atomic<bool> g_loaded{false};
std::atomic<unsigned long> g_lookups{0};

void InstallPointerQuery();

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
  if (!g_loaded.exchange(true)) InstallPointerQuery();
  return runtime;
}

MemoryKind ClassifyWithRuntime(const void* ptr) { return Runtime().classifier->Classify(ptr); }

// The first question loads the driver, which installs the query that fits.
MemoryKind LoadThenClassify(const void* ptr) {
  LoadRuntime();
  return ClassifyWithRuntime(ptr);
}

// What plan/ asks about pointers (plan/memory_kind.h): a test's fake runtime;
// before the driver is looked for, the loader; with a driver, its pointer
// attributes; without one nothing, so host calls never come into gpu/ again.
void InstallPointerQuery() {
  if (g_test_runtime != nullptr)
    plan::InstallPointerQuery(&ClassifyWithRuntime);
  else if (!g_loaded.load())
    plan::InstallPointerQuery(&LoadThenClassify);
  else
    plan::InstallPointerQuery(LoadRuntime().available ? &ClassifyWithRuntime : nullptr);
}

// Installed when libsieve loads (it is linked whole; a static user of sieve_impl
// links this file through the modes' device paths, which ask Runtime()).
[[maybe_unused]] const bool g_installed = (InstallPointerQuery(), true);

}  // namespace

const GpuRuntime& Runtime() {
  g_lookups.fetch_add(1, std::memory_order_relaxed);
  if (g_test_runtime != nullptr) return *g_test_runtime;
  return LoadRuntime();
}

unsigned long RuntimeLookups() { return g_lookups.load(std::memory_order_relaxed); }

void SetRuntimeForTest(const GpuRuntime* fake) {
  g_test_runtime = fake;
  InstallPointerQuery();
}

}  // namespace sieve::gpu
