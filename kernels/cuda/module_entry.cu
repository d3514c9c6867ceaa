// Entry points of the kernel module embedded in libsieve (see
// src/gpu/kernel_module.h): extern "C" names with plain arguments, so the
// driver API finds them by name (cuModuleGetFunction) and launches them with
// cuLaunchKernel, without the CUDA runtime. Masked pack/unpack: one instance
// per element size (they only move elements). Ternary: one per floating type
// (f32, f16, bf16), dense: quantize into w = 2 bits (one contribution; with
// error feedback the residual updated in the same pass), the error-feedback
// sum g + e_prev, dequantize the final sums from any w (in place, or
// scattered to a mask's kept positions).
#include <cstddef>
#include <cstdint>

#include "kernels/cuda/masked_pack_device.cuh"
#include "kernels/cuda/ternary_device.cuh"

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

#define SIEVE_TERNARY_ENTRIES(NAME, L)                                                         \
  extern "C" __global__ void sieve_ternary_absmax_##NAME(const void* in, size_t count,         \
                                                         size_t block, float* scales) {        \
    sieve::kernels::TernaryAbsMaxBody<L>(in, nullptr, count, block, scales);                 \
  }                                                                                            \
  extern "C" __global__ void sieve_ternary_quantize_##NAME(                                    \
      const void* in, size_t count, size_t block, const float* scales,                         \
      sieve::kernels::PhiloxStream rng, uint8_t* wire) {                                       \
    sieve::kernels::TernaryQuantizePackBody<L>(in, nullptr, 0, count, block, scales, rng,    \
                                               sieve::kernels::TernaryBits(1), wire);        \
  }                                                                                            \
  extern "C" __global__ void sieve_ternary_quantize_feedback_##NAME(                           \
      const void* in, size_t count, size_t block, const float* scales,                         \
      sieve::kernels::PhiloxStream rng, uint8_t* wire, float* residual) {                      \
    sieve::kernels::TernaryQuantizePackBody<L>(in, nullptr, 0, count, block, scales, rng,    \
                                               sieve::kernels::TernaryBits(1), wire,         \
                                               residual);                                    \
  }                                                                                            \
  extern "C" __global__ void sieve_ternary_feedback_apply_##NAME(                              \
      const void* g, float* residual, int fresh, void* out, size_t count) {                    \
    sieve::kernels::TernaryFeedbackApplyBody<L>(g, residual, fresh, out, count);             \
  }                                                                                            \
  extern "C" __global__ void sieve_ternary_dequantize_##NAME(                                  \
      const uint8_t* wire, size_t count, int w, size_t block, const float* scales,             \
      int divisor, void* out) {                                                                \
    sieve::kernels::TernaryDequantizeWireBody<L>(wire, count, w, block, scales, divisor, out); \
  }                                                                                            \
  extern "C" __global__ void sieve_ternary_dequantize_scatter_##NAME(                          \
      const uint8_t* wire, size_t count, int w, size_t block, const float* scales,             \
      int divisor, const uint32_t* idx, void* out) {                                           \
    sieve::kernels::TernaryDequantizeWireBody<L>(wire, count, w, block, scales, divisor, out,  \
                                                 idx);                                         \
  }

SIEVE_TERNARY_ENTRIES(f32, sieve::kernels::TernaryF32)
SIEVE_TERNARY_ENTRIES(f16, sieve::kernels::TernaryF16)
SIEVE_TERNARY_ENTRIES(bf16, sieve::kernels::TernaryBf16)
