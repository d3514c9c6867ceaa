// CUDA ternary kernels: one thread per group of 8 elements (one packed group
// of w bytes), around the per-element inlines of ternary.h that the CPU loops
// use too, so results are bit-identical. Launched on the caller's stream.
#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/cuda/ternary_device.cuh"
#include "kernels/ternary_cuda.h"

namespace sieve::kernels {
namespace {

constexpr int kGroup = kTernaryGroup;
constexpr int kThreads = kTernaryThreads;

unsigned Blocks(size_t threads) {
  size_t blocks = (threads + kThreads - 1) / kThreads;
  return static_cast<unsigned>(blocks < 65535 ? (blocks > 0 ? blocks : 1) : 65535);
}

__device__ size_t GlobalThread() {
  return blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
}
__device__ size_t Stride() { return static_cast<size_t>(gridDim.x) * blockDim.x; }
__device__ int GroupCount(size_t elems, size_t g) {
  size_t left = elems - g * kGroup;
  return static_cast<int>(left < kGroup ? left : kGroup);
}

template <typename L>
__global__ void AbsMaxKernel(const void* in, const uint32_t* idx, size_t count, size_t block,
                             float* scales) {
  TernaryAbsMaxBody<L>(in, idx, count, block, scales);
}

template <typename L>
__global__ void QuantizePackKernel(const void* in, const uint32_t* idx, size_t offset,
                                   size_t elems, size_t block, const float* scales,
                                   PhiloxStream rng, int w, uint8_t* wire) {
  TernaryQuantizePackBody<L>(in, idx, offset, elems, block, scales, rng, w, wire);
}

template <typename L>
__global__ void QuantizeFeedbackKernel(const void* sent, size_t count, size_t block,
                                       const float* scales, PhiloxStream rng, uint8_t* wire,
                                       float* residual) {
  TernaryQuantizePackBody<L>(sent, nullptr, 0, count, block, scales, rng, TernaryBits(1), wire,
                             residual);
}

template <typename L>
__global__ void FeedbackApplyKernel(const void* g, float* residual, void* out, size_t count) {
  TernaryFeedbackApplyBody<L>(g, residual, /*fresh=*/0, out, count);
}

template <typename L, typename T>
__global__ void QuantizeAddKernel(const void* in, const uint32_t* idx, size_t offset,
                                  size_t elems, size_t block, const float* scales,
                                  PhiloxStream rng, const uint8_t* wire, int w, T* work) {
  int32_t q[kGroup], v[kGroup] = {0, 0, 0, 0, 0, 0, 0, 0};
  size_t groups = (elems + kGroup - 1) / kGroup;
  for (size_t g = GlobalThread(); g < groups; g += Stride()) {
    int cnt = GroupCount(elems, g);
    TernaryQuantizeRun<L>(in, idx, offset + g * kGroup, cnt, block, scales, rng, q);
    if (wire != nullptr) TernaryUnpackGroup(wire + g * w, cnt, w, v);
    for (int k = 0; k < cnt; ++k) work[g * kGroup + k] = static_cast<T>(q[k] + v[k]);
  }
}

template <typename T>
__global__ void PackKernel(const T* work, size_t elems, int w, uint8_t* wire) {
  int32_t v[kGroup];
  size_t groups = (elems + kGroup - 1) / kGroup;
  for (size_t g = GlobalThread(); g < groups; g += Stride()) {
    int cnt = GroupCount(elems, g);
    for (int k = 0; k < cnt; ++k) v[k] = work[g * kGroup + k];
    TernaryPackGroup(v, cnt, w, wire + g * w);
  }
}

template <typename T>
__global__ void UnpackKernel(const uint8_t* wire, size_t elems, int w, bool accumulate, T* work) {
  int32_t v[kGroup];
  size_t groups = (elems + kGroup - 1) / kGroup;
  for (size_t g = GlobalThread(); g < groups; g += Stride()) {
    int cnt = GroupCount(elems, g);
    TernaryUnpackGroup(wire + g * w, cnt, w, v);
    for (int k = 0; k < cnt; ++k) {
      T* p = work + g * kGroup + k;
      *p = static_cast<T>(accumulate ? *p + v[k] : v[k]);
    }
  }
}

template <typename L, typename T>
__global__ void DequantizeKernel(const T* sums, size_t offset, size_t elems, size_t block,
                                 const float* scales, int divisor, void* out) {
  for (size_t i = GlobalThread(); i < elems; i += Stride())
    L::Store(out, i, TernaryDequantizeOne(sums[i], scales[(offset + i) / block], divisor));
}

// Masked: kept element offset+k (dense position idx[offset+k]) gets its sum;
// ZeroClearedKernel zeroes the rest of the range, so no output is written twice.
template <typename L, typename T>
__global__ void DequantizeScatterKernel(const T* sums, size_t offset, size_t elems, size_t block,
                                        const float* scales, int divisor, const uint32_t* idx,
                                        void* out) {
  for (size_t k = GlobalThread(); k < elems; k += Stride())
    L::Store(out, idx[offset + k],
             TernaryDequantizeOne(sums[k], scales[(offset + k) / block], divisor));
}

template <typename L>
__global__ void ZeroClearedKernel(const uint64_t* bits, size_t begin, size_t end, void* out) {
  for (size_t j = begin + GlobalThread(); j < end; j += Stride())
    if (((bits[j / 64] >> (j % 64)) & 1u) == 0) L::Store(out, j, 0.0f);
}

template <typename Fn>
int WithLoader(DType dtype, Fn&& fn) {
  if (dtype == DType::kFloat16) fn(TernaryF16{});
  else if (dtype == DType::kBfloat16) fn(TernaryBf16{});
  else fn(TernaryF32{});
  return static_cast<int>(cudaGetLastError());
}

template <typename Fn>
void WithWork(TernaryWork wt, Fn&& fn) {
  if (wt == TernaryWork::kInt8) fn(int8_t{});
  else if (wt == TernaryWork::kInt16) fn(int16_t{});
  else fn(int32_t{});
}

cudaStream_t S(void* stream) { return static_cast<cudaStream_t>(stream); }

}  // namespace

int TernaryAbsMaxCuda(DType dtype, const void* in, const uint32_t* idx, size_t count,
                      size_t block, float* scales, void* stream) {
  if (count == 0) return 0;
  size_t nblocks = (count + block - 1) / block;
  unsigned grid = static_cast<unsigned>(nblocks < 65535 ? nblocks : 65535);
  return WithLoader(dtype, [&](auto l) {
    AbsMaxKernel<decltype(l)><<<grid, kThreads, 0, S(stream)>>>(in, idx, count, block, scales);
  });
}

int TernaryQuantizePackCuda(DType dtype, const void* in, const uint32_t* idx, size_t offset,
                            size_t elems, size_t block, const float* scales, PhiloxStream rng,
                            int w, void* wire, void* stream) {
  if (elems == 0) return 0;
  size_t groups = (elems + kGroup - 1) / kGroup;
  return WithLoader(dtype, [&](auto l) {
    QuantizePackKernel<decltype(l)><<<Blocks(groups), kThreads, 0, S(stream)>>>(
        in, idx, offset, elems, block, scales, rng, w, static_cast<uint8_t*>(wire));
  });
}

int TernaryFeedbackApplyCuda(DType dtype, const void* g, float* residual, void* out, size_t count,
                             void* stream) {
  if (count == 0) return 0;
  return WithLoader(dtype, [&](auto l) {
    FeedbackApplyKernel<decltype(l)><<<Blocks(count), kThreads, 0, S(stream)>>>(g, residual, out,
                                                                                count);
  });
}

int TernaryQuantizeFeedbackCuda(DType dtype, const void* sent, size_t count, size_t block,
                                const float* scales, PhiloxStream rng, void* wire,
                                float* residual, void* stream) {
  if (count == 0) return 0;
  size_t groups = (count + kGroup - 1) / kGroup;
  return WithLoader(dtype, [&](auto l) {
    QuantizeFeedbackKernel<decltype(l)><<<Blocks(groups), kThreads, 0, S(stream)>>>(
        sent, count, block, scales, rng, static_cast<uint8_t*>(wire), residual);
  });
}

int TernaryQuantizeAddCuda(DType dtype, const void* in, const uint32_t* idx, size_t offset,
                           size_t elems, size_t block, const float* scales, PhiloxStream rng,
                           const void* wire, int w, TernaryWork wt, void* work, void* stream) {
  if (elems == 0) return 0;
  size_t groups = (elems + kGroup - 1) / kGroup;
  return WithLoader(dtype, [&](auto l) {
    WithWork(wt, [&](auto t) {
      using T = decltype(t);
      QuantizeAddKernel<decltype(l), T><<<Blocks(groups), kThreads, 0, S(stream)>>>(
          in, idx, offset, elems, block, scales, rng, static_cast<const uint8_t*>(wire), w,
          static_cast<T*>(work));
    });
  });
}

int TernaryPackCuda(TernaryWork wt, const void* work, size_t elems, int w, void* wire,
                    void* stream) {
  if (elems == 0) return 0;
  size_t groups = (elems + kGroup - 1) / kGroup;
  WithWork(wt, [&](auto t) {
    using T = decltype(t);
    PackKernel<T><<<Blocks(groups), kThreads, 0, S(stream)>>>(static_cast<const T*>(work), elems,
                                                               w, static_cast<uint8_t*>(wire));
  });
  return static_cast<int>(cudaGetLastError());
}

int TernaryUnpackCuda(TernaryWork wt, const void* wire, size_t elems, int w, bool accumulate,
                      void* work, void* stream) {
  if (elems == 0) return 0;
  size_t groups = (elems + kGroup - 1) / kGroup;
  WithWork(wt, [&](auto t) {
    using T = decltype(t);
    UnpackKernel<T><<<Blocks(groups), kThreads, 0, S(stream)>>>(
        static_cast<const uint8_t*>(wire), elems, w, accumulate, static_cast<T*>(work));
  });
  return static_cast<int>(cudaGetLastError());
}

int TernaryDequantizeRangeCuda(DType dtype, TernaryWork wt, const void* sums, size_t offset,
                               size_t elems, size_t block, const float* scales, int divisor,
                               void* out, void* stream) {
  if (elems == 0) return 0;
  return WithLoader(dtype, [&](auto l) {
    WithWork(wt, [&](auto t) {
      using T = decltype(t);
      DequantizeKernel<decltype(l), T><<<Blocks(elems), kThreads, 0, S(stream)>>>(
          static_cast<const T*>(sums), offset, elems, block, scales, divisor, out);
    });
  });
}

int TernaryDequantizeCuda(DType dtype, TernaryWork wt, const void* sums, size_t count,
                          size_t block, const float* scales, int divisor, void* out,
                          void* stream) {
  return TernaryDequantizeRangeCuda(dtype, wt, sums, 0, count, block, scales, divisor, out,
                                    stream);
}

int TernaryDequantizeScatterCuda(DType dtype, TernaryWork wt, const void* sums, size_t offset,
                                 size_t elems, size_t block, const float* scales, int divisor,
                                 const uint32_t* idx, const uint64_t* bits, size_t begin,
                                 size_t end, void* out, void* stream) {
  if (end <= begin) return 0;
  return WithLoader(dtype, [&](auto l) {
    using L = decltype(l);
    ZeroClearedKernel<L><<<Blocks(end - begin), kThreads, 0, S(stream)>>>(bits, begin, end, out);
    if (elems == 0) return;
    WithWork(wt, [&](auto t) {
      using T = decltype(t);
      DequantizeScatterKernel<L, T><<<Blocks(elems), kThreads, 0, S(stream)>>>(
          static_cast<const T*>(sums), offset, elems, block, scales, divisor, idx, out);
    });
  });
}

}  // namespace sieve::kernels
