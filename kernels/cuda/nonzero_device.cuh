// The zero-pattern device kernels, shared by the runtime-API wrappers
// (nonzero.cu) and the driver-launched module embedded in libsieve
// (module_entry.cu). Elements are compared as unsigned integers of their size,
// as kernels/nonzero.cc does: -0.0 and NaN count as non-zero, bit for bit.
#ifndef SIEVE_KERNELS_CUDA_NONZERO_DEVICE_CUH_
#define SIEVE_KERNELS_CUDA_NONZERO_DEVICE_CUH_

#include <cstddef>
#include <cstdint>

namespace sieve::kernels {

// One warp per bitmap word (blockDim.x must be a multiple of 32): lane i tests
// elements 64w + i and 64w + 32 + i, so two ballots are the word's low and
// high halves and the loads are coalesced. Called by every lane of the warp.
template <typename T>
__device__ __forceinline__ uint64_t NonzeroWordOfWarp(const T* data, size_t w, size_t count,
                                                      unsigned lane) {
  const size_t j = w * 64 + lane;
  const unsigned lo = __ballot_sync(0xffffffffu, j < count && data[j] != T{0});
  const unsigned hi = __ballot_sync(0xffffffffu, j + 32 < count && data[j + 32] != T{0});
  return (static_cast<uint64_t>(hi) << 32) | lo;
}

// Warp-stride loop over the ceil(count/64) words; the word index is the same
// for all lanes of a warp, so the ballots see the whole warp.
template <typename Fn>
__device__ __forceinline__ void ForEachWordOfWarp(size_t count, Fn&& fn) {
  const size_t words = (count + 63) / 64;
  const size_t warps = static_cast<size_t>(gridDim.x) * blockDim.x / 32;
  const unsigned lane = threadIdx.x % 32;
  for (size_t w = (blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x) / 32; w < words;
       w += warps)
    fn(w, lane);
}

// bits[w] = the non-zero pattern of elements 64w .. 64w+63 (bits past count clear).
template <typename T>
__device__ __forceinline__ void NonzeroBitmapBody(const T* data, size_t count, uint64_t* bits) {
  ForEachWordOfWarp(count, [&](size_t w, unsigned lane) {
    const uint64_t word = NonzeroWordOfWarp(data, w, count, lane);
    if (lane == 0) bits[w] = word;
  });
}

// Sets *any = 1 if an element whose mask bit is clear is non-zero; never
// clears it (the caller zeroes it first). Racing stores all write 1.
template <typename T>
__device__ __forceinline__ void AnyNonzeroOutsideBody(const T* data, const uint64_t* mask,
                                                      size_t count, uint32_t* any) {
  ForEachWordOfWarp(count, [&](size_t w, unsigned lane) {
    const uint64_t keep = mask[w];     // the same for every lane
    if (keep == ~uint64_t{0}) return;  // every element kept: nothing to check
    const uint64_t word = NonzeroWordOfWarp(data, w, count, lane);
    if (lane == 0 && (word & ~keep) != 0) *any = 1;
  });
}

template <typename T>
__global__ void NonzeroBitmapKernel(const T* data, size_t count, uint64_t* bits) {
  NonzeroBitmapBody<T>(data, count, bits);
}

template <typename T>
__global__ void AnyNonzeroOutsideKernel(const T* data, const uint64_t* mask, size_t count,
                                        uint32_t* any) {
  AnyNonzeroOutsideBody<T>(data, mask, count, any);
}

}  // namespace sieve::kernels

#endif  // SIEVE_KERNELS_CUDA_NONZERO_DEVICE_CUH_
