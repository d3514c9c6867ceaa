// Entry points of the kernel module embedded in libsieve (see
// src/gpu/kernel_module.h): extern "C" names with plain arguments, so the
// driver API finds them by name (cuModuleGetFunction) and launches them with
// cuLaunchKernel, without the CUDA runtime. Masked pack/unpack: one instance
// per element size (they only move elements). Ternary: one per floating type
// (f32, f16, bf16), dense: quantize into w = 2 bits (one contribution; with
// error feedback the residual updated in the same pass), the error-feedback
// sum g + e_prev, dequantize the final sums from any w (in place, or
// scattered to a mask's kept positions). Dense reductions: one per datatype.
// Zero patterns (the mask tracker's): one instance per element size. Block-scaled
// integers (the quantized all-gather): encode and decode, one per floating type.
#include <cstddef>
#include <cstdint>

#include "kernels/cuda/block_quant_device.cuh"
#include "kernels/cuda/masked_pack_device.cuh"
#include "kernels/cuda/nonzero_device.cuh"
#include "kernels/cuda/reduce_device.cuh"
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

// Zero patterns: launched with blocks of 256 threads, one warp per bitmap word.
#define SIEVE_NONZERO_ENTRIES(BYTES, T)                                                        \
  extern "C" __global__ void sieve_nonzero_bitmap_##BYTES(const T* data, size_t count,         \
                                                          uint64_t* bits) {                    \
    sieve::kernels::NonzeroBitmapBody<T>(data, count, bits);                                   \
  }                                                                                            \
  extern "C" __global__ void sieve_any_nonzero_outside_##BYTES(                                \
      const T* data, const uint64_t* mask, size_t count, uint32_t* any) {                      \
    sieve::kernels::AnyNonzeroOutsideBody<T>(data, mask, count, any);                          \
  }

SIEVE_NONZERO_ENTRIES(1, uint8_t)
SIEVE_NONZERO_ENTRIES(2, uint16_t)
SIEVE_NONZERO_ENTRIES(4, uint32_t)
SIEVE_NONZERO_ENTRIES(8, uint64_t)

#define SIEVE_TERNARY_ENTRIES(NAME, L)                                                         \
  extern "C" __global__ void sieve_ternary_absmax_##NAME(                                      \
      const void* in, size_t count, size_t block, float* scales, const float* residual) {      \
    sieve::kernels::TernaryAbsMaxBody<L>(in, nullptr, count, block, scales, residual);         \
  }                                                                                            \
  extern "C" __global__ void sieve_ternary_quantize_##NAME(                                    \
      const void* in, size_t count, size_t block, const float* scales,                         \
      sieve::kernels::PhiloxStream rng, uint8_t* wire, int levels) {                           \
    sieve::kernels::TernaryQuantizePackBody<L>(in, nullptr, 0, count, block, scales, rng,    \
                                               sieve::kernels::TernaryBits(levels), wire,    \
                                               nullptr, levels);                             \
  }                                                                                            \
  extern "C" __global__ void sieve_ternary_quantize_feedback_##NAME(                           \
      const void* in, size_t count, size_t block, const float* scales,                         \
      sieve::kernels::PhiloxStream rng, uint8_t* wire, float* residual, int levels) {          \
    sieve::kernels::TernaryQuantizePackBody<L>(in, nullptr, 0, count, block, scales, rng,    \
                                               sieve::kernels::TernaryBits(levels), wire,    \
                                               residual, levels);                            \
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

// Block-scaled integers (the quantized all-gather), one per floating type;
// launched with kBlockQuantBlock threads, a CUDA block per scale block.
#define SIEVE_BLOCK_QUANT_ENTRIES(NAME, L)                                                     \
  extern "C" __global__ void sieve_block_quant_encode_##NAME(const void* in, size_t count,     \
                                                             int bits, uint8_t* out) {         \
    sieve::kernels::BlockQuantEncodeBody<L>(in, count, bits, out);                             \
  }                                                                                            \
  extern "C" __global__ void sieve_block_quant_decode_##NAME(const uint8_t* in, size_t count,  \
                                                             int bits, void* out) {            \
    sieve::kernels::BlockQuantDecodeBody<L>(in, count, bits, out);                             \
  }

SIEVE_BLOCK_QUANT_ENTRIES(f32, sieve::kernels::TernaryF32)
SIEVE_BLOCK_QUANT_ENTRIES(f16, sieve::kernels::TernaryF16)
SIEVE_BLOCK_QUANT_ENTRIES(bf16, sieve::kernels::TernaryBf16)

SIEVE_TERNARY_ENTRIES(f32, sieve::kernels::TernaryF32)
SIEVE_TERNARY_ENTRIES(f16, sieve::kernels::TernaryF16)
SIEVE_TERNARY_ENTRIES(bf16, sieve::kernels::TernaryBf16)

// Dense reductions (the direct path): one entry per datatype, the op an argument.
#define SIEVE_REDUCE_ENTRIES(NAME, E)                                                          \
  extern "C" __global__ void sieve_reduce_##NAME(int op, const E::Storage* a,                  \
                                                 const E::Storage* b, E::Storage* out,         \
                                                 size_t n) {                                   \
    sieve::kernels::reduce_device::ReduceBody<E>(static_cast<sieve::kernels::RedOp>(op), a, b, \
                                                 out, n);                                      \
  }                                                                                            \
  extern "C" __global__ void sieve_divide_##NAME(E::Storage* buf, size_t n, int divisor) {     \
    sieve::kernels::reduce_device::DivideBody<E>(buf, n, divisor);                             \
  }

namespace reduce_entry = sieve::kernels::reduce_device;
// In DType order (kernels/dtype.h): gpu/kernel_module.cc looks them up by these names.
SIEVE_REDUCE_ENTRIES(i8, reduce_entry::Native<int8_t>)
SIEVE_REDUCE_ENTRIES(u8, reduce_entry::Native<uint8_t>)
SIEVE_REDUCE_ENTRIES(i32, reduce_entry::Native<int32_t>)
SIEVE_REDUCE_ENTRIES(u32, reduce_entry::Native<uint32_t>)
SIEVE_REDUCE_ENTRIES(i64, reduce_entry::Native<int64_t>)
SIEVE_REDUCE_ENTRIES(u64, reduce_entry::Native<uint64_t>)
SIEVE_REDUCE_ENTRIES(f16, reduce_entry::Half)
SIEVE_REDUCE_ENTRIES(f32, reduce_entry::Native<float>)
SIEVE_REDUCE_ENTRIES(f64, reduce_entry::Native<double>)
SIEVE_REDUCE_ENTRIES(bf16, reduce_entry::Bf16)
