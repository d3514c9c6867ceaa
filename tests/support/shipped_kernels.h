// For the CUDA kernel tests and the kernel bench: the kernels libsieve ships
// (kernels/cuda/module_entry.cu, embedded in libsieve), launched the way
// libsieve launches them: CudaDeviceOps over the dlopen'ed driver, in GPU 0's
// primary context (the CUDA runtime's, which the tests use for memory and
// events). There is no other launch path to test.
#ifndef SIEVE_TESTS_SUPPORT_SHIPPED_KERNELS_H_
#define SIEVE_TESTS_SUPPORT_SHIPPED_KERNELS_H_

#include <cuda_runtime.h>

#include <string>

#include "gpu/cuda_device_ops.h"

namespace sieve_test {

// The shipped kernels, loaded on first use; nullptr with `why` without a
// GPU, a driver or the embedded module. Call from the thread that runs the
// tests (the primary context is made current there).
inline sieve::gpu::CudaDeviceOps* ShippedKernels(std::string* why) {
  static sieve::gpu::CudaDriver driver;
  static std::string error;
  static sieve::gpu::CudaDeviceOps* ops = []() -> sieve::gpu::CudaDeviceOps* {
    int n = 0;
    cudaError_t err = cudaGetDeviceCount(&n);
    if (err != cudaSuccess || n == 0) {
      error = err != cudaSuccess ? cudaGetErrorString(err) : "no CUDA device";
      return nullptr;
    }
    cudaSetDevice(0);
    cudaFree(nullptr);  // creates the primary context and makes it current here
    if (!sieve::gpu::LoadCudaDriver("libcuda.so.1", &driver, &error)) return nullptr;
    auto* loaded = new sieve::gpu::CudaDeviceOps(&driver);
    if (!loaded->HasKernels(&error)) return nullptr;
    sieve::Status st = loaded->PrepareKernels();
    if (!st.ok()) {
      error = st.message();
      return nullptr;
    }
    return loaded;
  }();
  if (ops == nullptr) *why = error;
  return ops;
}

}  // namespace sieve_test

#endif  // SIEVE_TESTS_SUPPORT_SHIPPED_KERNELS_H_
