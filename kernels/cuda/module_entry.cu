// Entry points of the kernel module embedded in libsieve (see
// src/gpu/kernel_module.h): extern "C" names with plain arguments, so the
// driver API finds them by name (cuModuleGetFunction) and launches them with
// cuLaunchKernel, without the CUDA runtime. One instance per element size:
// pack/unpack only move elements, so the element's type does not matter.
#include <cstddef>
#include <cstdint>

#include "kernels/cuda/masked_pack_device.cuh"

#define SIEVE_MASKED_ENTRIES(BYTES, T)                                                         \
  extern "C" __global__ void sieve_masked_pack_##BYTES(const T* in, const uint32_t* idx,       \
                                                       size_t nnz, T* out) {                   \
    sieve::kernels::PackBody<T>(in, idx, nnz, out);                                          \
  }                                                                                            \
  extern "C" __global__ void sieve_masked_scatter_##BYTES(const T* packed, const uint32_t* idx, \
                                                          size_t nnz, T* out) {                \
    sieve::kernels::ScatterBody<T>(packed, idx, nnz, out);                                   \
  }                                                                                            \
  extern "C" __global__ void sieve_masked_zero_cleared_##BYTES(const uint64_t* bits,           \
                                                               size_t begin, size_t end,       \
                                                               T* out) {                       \
    sieve::kernels::ZeroClearedBody<T>(bits, begin, end, out);                               \
  }

SIEVE_MASKED_ENTRIES(1, uint8_t)
SIEVE_MASKED_ENTRIES(2, uint16_t)
SIEVE_MASKED_ENTRIES(4, uint32_t)
SIEVE_MASKED_ENTRIES(8, uint64_t)
