// The masked pack/unpack device kernels, shared by the runtime-API wrappers
// (masked_pack.cu) and the driver-launched module embedded in libsieve
// (module_entry.cu). Pure element moves: bit-identical to the CPU kernels.
#ifndef SIEVE_KERNELS_CUDA_MASKED_PACK_DEVICE_CUH_
#define SIEVE_KERNELS_CUDA_MASKED_PACK_DEVICE_CUH_

#include <cstddef>
#include <cstdint>

namespace sieve::kernels {

// Grid-stride bodies: the __global__ templates below and the module's
// extern "C" entries are each one call of these.
template <typename T>
__device__ __forceinline__ void PackBody(const T* in, const uint32_t* idx, size_t nnz, T* out) {
  size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t k = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; k < nnz; k += stride)
    out[k] = in[idx[k]];
}

template <typename T>
__device__ __forceinline__ void ScatterBody(const T* packed, const uint32_t* idx, size_t nnz,
                                            T* out) {
  size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t k = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; k < nnz; k += stride)
    out[idx[k]] = packed[k];
}

// Zeroes the masked-out positions only, so it never races with the scatter.
template <typename T>
__device__ __forceinline__ void ZeroClearedBody(const uint64_t* bits, size_t begin, size_t end,
                                                T* out) {
  size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t j = begin + blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; j < end;
       j += stride) {
    if (((bits[j / 64] >> (j % 64)) & 1u) == 0) out[j] = T{0};
  }
}

template <typename T>
__global__ void PackKernel(const T* in, const uint32_t* idx, size_t nnz, T* out) {
  PackBody<T>(in, idx, nnz, out);
}

template <typename T>
__global__ void ScatterKernel(const T* packed, const uint32_t* idx, size_t nnz, T* out) {
  ScatterBody<T>(packed, idx, nnz, out);
}

template <typename T>
__global__ void ZeroClearedKernel(const uint64_t* bits, size_t begin, size_t end, T* out) {
  ZeroClearedBody<T>(bits, begin, end, out);
}

}  // namespace sieve::kernels

#endif  // SIEVE_KERNELS_CUDA_MASKED_PACK_DEVICE_CUH_
