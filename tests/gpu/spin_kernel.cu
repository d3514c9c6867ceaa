// A busy stream for the GPU tests: one thread sleeping in short naps.
#include "gpu/spin_kernel.h"

#include <cuda_runtime.h>

namespace sieve_test {
namespace {
__device__ unsigned long long GlobalTimerNs() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__global__ void Spin(unsigned long long ns) {
  unsigned long long start = GlobalTimerNs();
  while (GlobalTimerNs() - start < ns) __nanosleep(1000);
}
}  // namespace

int LaunchSpin(CUstream_st* stream, unsigned long long ns) {
  Spin<<<1, 1, 0, stream>>>(ns);
  return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
}  // namespace sieve_test
