// CUDA zero patterns: one warp per 64-element bitmap word (nonzero_device.cuh).
// Launched on the caller's stream; never synchronizes.
#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/cuda/nonzero_device.cuh"
#include "kernels/nonzero_cuda.h"

namespace sieve::kernels {
namespace {

constexpr unsigned kThreads = 256;  // 8 warps: 8 bitmap words a block

unsigned BlocksForWords(size_t words) {
  size_t blocks = (words + kThreads / 32 - 1) / (kThreads / 32);
  return static_cast<unsigned>(blocks < 65535 ? (blocks > 0 ? blocks : 1) : 65535);
}

template <typename T>
int Bitmap(const void* data, size_t count, uint64_t* bits, cudaStream_t s) {
  NonzeroBitmapKernel<T><<<BlocksForWords((count + 63) / 64), kThreads, 0, s>>>(
      static_cast<const T*>(data), count, bits);
  return static_cast<int>(cudaGetLastError());
}

template <typename T>
int AnyOutside(const void* data, const uint64_t* mask, size_t count, uint32_t* any,
               cudaStream_t s) {
  AnyNonzeroOutsideKernel<T><<<BlocksForWords((count + 63) / 64), kThreads, 0, s>>>(
      static_cast<const T*>(data), mask, count, any);
  return static_cast<int>(cudaGetLastError());
}

}  // namespace

int NonzeroBitmapCuda(size_t elem_size, const void* data, size_t count, uint64_t* bits,
                      void* stream) {
  if (count == 0) return 0;  // no words to write
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  switch (elem_size) {
    case 1: return Bitmap<uint8_t>(data, count, bits, s);
    case 2: return Bitmap<uint16_t>(data, count, bits, s);
    case 4: return Bitmap<uint32_t>(data, count, bits, s);
    case 8: return Bitmap<uint64_t>(data, count, bits, s);
  }
  return static_cast<int>(cudaErrorInvalidValue);
}

int AnyNonzeroOutsideCuda(size_t elem_size, const void* data, const uint64_t* mask, size_t count,
                          uint32_t* any, void* stream) {
  if (elem_size != 1 && elem_size != 2 && elem_size != 4 && elem_size != 8)
    return static_cast<int>(cudaErrorInvalidValue);
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  // The kernel only ever sets the word: start it at "none found".
  cudaError_t err = cudaMemsetAsync(any, 0, sizeof *any, s);
  if (err != cudaSuccess || count == 0) return static_cast<int>(err);
  switch (elem_size) {
    case 1: return AnyOutside<uint8_t>(data, mask, count, any, s);
    case 2: return AnyOutside<uint16_t>(data, mask, count, any, s);
    case 4: return AnyOutside<uint32_t>(data, mask, count, any, s);
    default: return AnyOutside<uint64_t>(data, mask, count, any, s);
  }
}

}  // namespace sieve::kernels
