// The block-scaled integer kernels of the quantized all-gather on the device,
// around block_quant.h's per-element inlines, so CPU and device write the same
// bytes. Launch with kBlockQuantBlock (256) threads per block: one thread per
// element of a scale block, grid-stride over the scale blocks.
#ifndef SIEVE_KERNELS_CUDA_BLOCK_QUANT_DEVICE_CUH_
#define SIEVE_KERNELS_CUDA_BLOCK_QUANT_DEVICE_CUH_

#include <cstddef>
#include <cstdint>

#include "kernels/block_quant.h"
#include "kernels/ternary.h"

namespace sieve::kernels {

// The scale of block b sits unaligned at out + 4b (block_quant.h's layout).
__device__ __forceinline__ void BlockQuantPutScale(uint8_t* out, size_t b, float s) {
  uint32_t u;
  memcpy(&u, &s, 4);
  for (int k = 0; k < 4; ++k) out[4 * b + k] = static_cast<uint8_t>(u >> (8 * k));
}
__device__ __forceinline__ float BlockQuantGetScale(const uint8_t* in, size_t b) {
  uint32_t u = 0;
  for (int k = 0; k < 4; ++k) u |= static_cast<uint32_t>(in[4 * b + k]) << (8 * k);
  float s;
  memcpy(&s, &u, 4);
  return s;
}

// Encodes `count` elements of `in` at `bits` (8 or 4) into `out`: the max
// magnitude of each block by a shared-memory reduction over its bits (exact,
// order-free), thread 0 writes the scale, each thread its code; with 4 bits
// the even thread of a pair takes its odd neighbour's code by a shuffle and
// writes their byte.
template <typename L>
__device__ __forceinline__ void BlockQuantEncodeBody(const void* in, size_t count, int bits,
                                                     uint8_t* out) {
  __shared__ uint32_t part[kBlockQuantBlock];
  const size_t nblocks = (count + kBlockQuantBlock - 1) / kBlockQuantBlock;
  uint8_t* codes = out + nblocks * 4;
  for (size_t b = blockIdx.x; b < nblocks; b += gridDim.x) {
    const size_t j = b * kBlockQuantBlock + threadIdx.x;
    const float x = j < count ? L::Load(in, j) : 0.0f;
    part[threadIdx.x] = TernaryMagnitudeBits(x);
    __syncthreads();
    for (int s = kBlockQuantBlock / 2; s > 0; s /= 2) {
      if (threadIdx.x < s && part[threadIdx.x + s] > part[threadIdx.x])
        part[threadIdx.x] = part[threadIdx.x + s];
      __syncthreads();
    }
    const float scale = BlockQuantScaleOfBits(part[0], bits);
    if (threadIdx.x == 0) BlockQuantPutScale(out, b, scale);
    const int code = j < count ? BlockQuantCode(x, scale, bits) : 0;
    if (bits == 8) {
      if (j < count) codes[j] = static_cast<uint8_t>(static_cast<int8_t>(code));
    } else {
      const int odd = __shfl_down_sync(0xffffffffu, code, 1);
      if (j < count && j % 2 == 0)
        codes[j / 2] = static_cast<uint8_t>((code & 0xf) | ((odd & 0xf) << 4));
    }
    __syncthreads();  // part[] is reused by the next block
  }
}

// Decodes `count` elements from `in` (one encoded shard) into `out`.
template <typename L>
__device__ __forceinline__ void BlockQuantDecodeBody(const uint8_t* in, size_t count, int bits,
                                                     void* out) {
  const size_t nblocks = (count + kBlockQuantBlock - 1) / kBlockQuantBlock;
  const uint8_t* codes = in + nblocks * 4;
  for (size_t b = blockIdx.x; b < nblocks; b += gridDim.x) {
    const size_t j = b * kBlockQuantBlock + threadIdx.x;
    if (j < count)
      L::Store(out, j,
               BlockQuantValue(BlockQuantCodeAt(codes, j, bits), BlockQuantGetScale(in, b)));
  }
}

}  // namespace sieve::kernels

#endif  // SIEVE_KERNELS_CUDA_BLOCK_QUANT_DEVICE_CUH_
