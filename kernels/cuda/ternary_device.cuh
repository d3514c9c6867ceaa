// The ternary device kernels that both the runtime-API wrappers (ternary.cu)
// and the driver-launched module embedded in libsieve (module_entry.cu) run:
// block abs-max, quantize + pack (with the error-feedback residual update),
// unpack + dequantize of the final sums, and the error-feedback sum,
// around ternary.h's per-element inlines,
// so CPU and device results are bit-identical.
#ifndef SIEVE_KERNELS_CUDA_TERNARY_DEVICE_CUH_
#define SIEVE_KERNELS_CUDA_TERNARY_DEVICE_CUH_

#include <cstddef>
#include <cstdint>

#include "kernels/ternary.h"
#include "kernels/ternary_feedback.h"

namespace sieve::kernels {

constexpr int kTernaryGroup = 8;       // elements per packed group (one thread)
constexpr int kTernaryThreads = 256;   // AbsMaxBody's reduction assumes this block size

// One CUDA block per scale block (grid-stride over blocks); the max runs over
// magnitude bits (TernaryMagnitudeBits: exact and order-free, NaN above every
// number), so a NaN or an infinity gives the block a NaN scale, as on the CPU.
// With error feedback (`residual` not null, residual[j] for element j) the max is
// still the input's alone, and the block's first residual poisons it where NaN
// (TernaryPoisonedBits), as on the CPU.
// Launch with kTernaryThreads threads per block.
template <typename L>
__device__ __forceinline__ void TernaryAbsMaxBody(const void* in, const uint32_t* idx, size_t count,
                                                  size_t block, float* scales,
                                                  const float* residual = nullptr) {
  __shared__ uint32_t part[kTernaryThreads];
  size_t nblocks = (count + block - 1) / block;
  for (size_t b = blockIdx.x; b < nblocks; b += gridDim.x) {
    size_t begin = b * block, end = begin + block < count ? begin + block : count;
    uint32_t m = 0;
    for (size_t j = begin + threadIdx.x; j < end; j += blockDim.x) {
      uint32_t a = TernaryMagnitudeBits(L::Load(in, idx != nullptr ? idx[j] : j));
      m = a > m ? a : m;
    }
    part[threadIdx.x] = m;
    __syncthreads();
    for (int s = kTernaryThreads / 2; s > 0; s /= 2) {
      if (threadIdx.x < s && part[threadIdx.x + s] > part[threadIdx.x])
        part[threadIdx.x] = part[threadIdx.x + s];
      __syncthreads();
    }
    if (threadIdx.x == 0)
      scales[b] = TernaryScaleOfBits(
          residual != nullptr ? TernaryPoisonedBits(residual[begin], part[0]) : part[0]);
    __syncthreads();
  }
}

// Grid-stride over groups of 8 elements: quantize elements offset.. with the
// rank's Philox stream at `levels` levels (1: ternary) and pack them in w bits
// each (TernaryBits(levels) for a rank's codes). With error feedback
// (`residual` not null, residual[i] for element offset+i, holding the sum
// sent), the residual becomes what the code dropped (kernels::TernaryFeedbackUpdate)
// from the same q, so no second quantization pass.
template <typename L>
__device__ __forceinline__ void TernaryQuantizePackBody(const void* in, const uint32_t* idx,
                                                        size_t offset, size_t elems, size_t block,
                                                        const float* scales, PhiloxStream rng,
                                                        int w, uint8_t* wire,
                                                        float* residual = nullptr,
                                                        int levels = 1) {
  int32_t q[kTernaryGroup];
  size_t groups = (elems + kTernaryGroup - 1) / kTernaryGroup;
  size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t g = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; g < groups;
       g += stride) {
    size_t left = elems - g * kTernaryGroup;
    int cnt = static_cast<int>(left < kTernaryGroup ? left : kTernaryGroup);
    TernaryQuantizeRun<L>(in, idx, offset + g * kTernaryGroup, cnt, block, scales, rng, q,
                          levels);
    TernaryPackGroup(q, cnt, w, wire + g * w);
    if (residual == nullptr) continue;
    for (int k = 0; k < cnt; ++k) {
      size_t i = g * kTernaryGroup + k;
      residual[i] =
          TernaryFeedbackResidual(residual[i], scales[(offset + i) / block], q[k], levels);
    }
  }
}

// Grid-stride over groups of 8: the final sums, packed in w bits each, become
// s_b * Q (/ divisor) in the output type: TernaryUnpack + TernaryDequantizeRange
// in one pass, element by element through the same inlines. With `idx` (a
// mask's kept positions) element j goes to out[idx[j]] instead: the scatter
// of TernaryDequantizeScatter (the cleared positions are zeroed apart).
template <typename L>
__device__ __forceinline__ void TernaryDequantizeWireBody(const uint8_t* wire, size_t count,
                                                          int w, size_t block,
                                                          const float* scales, int divisor,
                                                          void* out,
                                                          const uint32_t* idx = nullptr) {
  int32_t v[kTernaryGroup];
  size_t groups = (count + kTernaryGroup - 1) / kTernaryGroup;
  size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t g = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; g < groups;
       g += stride) {
    size_t left = count - g * kTernaryGroup;
    int cnt = static_cast<int>(left < kTernaryGroup ? left : kTernaryGroup);
    TernaryUnpackGroup(wire + g * w, cnt, w, v);
    for (int k = 0; k < cnt; ++k) {
      size_t j = g * kTernaryGroup + k;
      L::Store(out, idx != nullptr ? idx[j] : j,
               TernaryDequantizeOne(v[k], scales[j / block], divisor));
    }
  }
}

// Grid-stride over elements: out[j] = g[j] + e_prev[j] rounded to the
// datatype, residual[j] = that sum in float32 (kernels::TernaryFeedbackApply).
// `fresh`: the residual was just allocated and counts as zeros (the host
// registry's fresh residuals are zeros), so it needs no memset.
template <typename L>
__device__ __forceinline__ void TernaryFeedbackApplyBody(const void* g, float* residual,
                                                         int fresh, void* out, size_t count) {
  size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t j = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; j < count;
       j += stride) {
    float sum = TernaryFeedbackSum<L>(g, j, fresh ? 0.0f : residual[j]);
    residual[j] = sum;
    L::Store(out, j, sum);
  }
}

}  // namespace sieve::kernels

#endif  // SIEVE_KERNELS_CUDA_TERNARY_DEVICE_CUH_
