// For cuda-labelled tests: whether a usable GPU is present, and why not, so
// each test can GTEST_SKIP() with the reason on machines without one.
#ifndef SIEVE_TESTS_SUPPORT_GPU_H_
#define SIEVE_TESTS_SUPPORT_GPU_H_

#include <cuda_runtime.h>

#include <string>

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

}  // namespace sieve_test

#endif  // SIEVE_TESTS_SUPPORT_GPU_H_
