// CUDA versions of Reduce/DivideBy: one grid-stride kernel per type (the
// bodies in reduce_device.cuh), the same per-element arithmetic as the CPU
// loops (see reduce.cc), so results are bit-identical. Launched on the
// caller's stream; never synchronizes.
#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "kernels/cuda/reduce_device.cuh"
#include "kernels/reduce_cuda.h"

namespace sieve::kernels {
namespace {

using namespace reduce_device;  // NOLINT: the element types and kernels

unsigned Blocks(size_t n) {
  size_t blocks = (n + 255) / 256;
  return static_cast<unsigned>(blocks < 65535 ? (blocks > 0 ? blocks : 1) : 65535);
}

template <typename E>
int LaunchReduce(RedOp op, const void* a, const void* b, void* out, size_t n, void* stream) {
  using S = typename E::Storage;
  ReduceKernel<E><<<Blocks(n), 256, 0, static_cast<cudaStream_t>(stream)>>>(
      op, static_cast<const S*>(a), static_cast<const S*>(b), static_cast<S*>(out), n);
  return static_cast<int>(cudaGetLastError());
}

template <typename E>
int LaunchDivide(void* buf, size_t n, int divisor, void* stream) {
  DivideKernel<E><<<Blocks(n), 256, 0, static_cast<cudaStream_t>(stream)>>>(
      static_cast<typename E::Storage*>(buf), n, divisor);
  return static_cast<int>(cudaGetLastError());
}

// Calls F<Element>() for the element type of dtype.
template <template <typename> class F, typename... Args>
int ForType(DType dtype, Args... args) {
  switch (dtype) {
    case DType::kInt8: return F<Native<int8_t>>::Run(args...);
    case DType::kUint8: return F<Native<uint8_t>>::Run(args...);
    case DType::kInt32: return F<Native<int32_t>>::Run(args...);
    case DType::kUint32: return F<Native<uint32_t>>::Run(args...);
    case DType::kInt64: return F<Native<int64_t>>::Run(args...);
    case DType::kUint64: return F<Native<uint64_t>>::Run(args...);
    case DType::kFloat16: return F<Half>::Run(args...);
    case DType::kFloat32: return F<Native<float>>::Run(args...);
    case DType::kFloat64: return F<Native<double>>::Run(args...);
    case DType::kBfloat16: return F<Bf16>::Run(args...);
  }
  return static_cast<int>(cudaErrorInvalidValue);
}

template <typename E>
struct ReduceFor {
  static int Run(RedOp op, const void* a, const void* b, void* out, size_t n, void* stream) {
    return LaunchReduce<E>(op, a, b, out, n, stream);
  }
};

template <typename E>
struct DivideFor {
  static int Run(void* buf, size_t n, int divisor, void* stream) {
    return LaunchDivide<E>(buf, n, divisor, stream);
  }
};

}  // namespace

int ReduceCuda(DType dtype, RedOp op, const void* a, const void* b, void* out, size_t n,
               void* stream) {
  if (n == 0) return 0;
  return ForType<ReduceFor>(dtype, op, a, b, out, n, stream);
}

int DivideByCuda(DType dtype, void* buf, size_t n, int divisor, void* stream) {
  if (n == 0 || divisor < 1) return 0;
  return ForType<DivideFor>(dtype, buf, n, divisor, stream);
}

}  // namespace sieve::kernels
