// For cuda-labelled tests: whether a usable GPU is present, and why not, so
// each test can GTEST_SKIP() with the reason on machines without one.
#ifndef SIEVE_TESTS_SUPPORT_GPU_H_
#define SIEVE_TESTS_SUPPORT_GPU_H_

#include <cuda_runtime.h>

#include <string>
#include <vector>

namespace sieve_test {

inline bool HaveGpu(std::string* why) {
  int count = 0;
  cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess || count == 0) {
    *why = err != cudaSuccess ? cudaGetErrorString(err) : "no CUDA device";
    return false;
  }
  return true;
}

// A device copy of `host` (8 bytes more: an empty vector still gets memory),
// nullptr if it cannot be had; the caller cudaFree()s it.
template <typename T>
T* ToDevice(const std::vector<T>& host) {
  void* d = nullptr;
  if (cudaMalloc(&d, host.size() * sizeof(T) + 8) != cudaSuccess) return nullptr;
  cudaMemcpy(d, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice);
  return static_cast<T*>(d);
}

inline std::vector<char> FromDevice(const void* d, size_t bytes) {
  std::vector<char> out(bytes);
  cudaMemcpy(out.data(), d, bytes, cudaMemcpyDeviceToHost);
  return out;
}

}  // namespace sieve_test

#endif  // SIEVE_TESTS_SUPPORT_GPU_H_
