// The dense reduction device kernels, shared by the runtime-API wrappers
// (reduce_cuda.cu) and the driver-launched module embedded in libsieve
// (module_entry.cu, the direct path's reductions): the same per-element
// arithmetic as the CPU loops (reduce.cc), so results are bit-identical.
#ifndef SIEVE_KERNELS_CUDA_REDUCE_DEVICE_CUH_
#define SIEVE_KERNELS_CUDA_REDUCE_DEVICE_CUH_

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "kernels/dtype.h"

// A namespace of its own: Native/Half/Bf16 are common names.
namespace sieve::kernels::reduce_device {

template <typename T>
using WrapType =
    std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned, std::make_unsigned_t<T>>;

// Element access: native types as they are, float16/bfloat16 through float32.
template <typename T>
struct Native {
  using Storage = T;
  using Compute = T;
  __device__ static Compute Load(Storage v) { return v; }
  __device__ static Storage Store(Compute v) { return v; }
};
struct Half {
  using Storage = uint16_t;
  using Compute = float;
  __device__ static float Load(uint16_t v) { return HalfToFloat(v); }
  __device__ static uint16_t Store(float v) { return FloatToHalf(v); }
};
struct Bf16 {
  using Storage = uint16_t;
  using Compute = float;
  __device__ static float Load(uint16_t v) { return Bf16ToFloat(v); }
  __device__ static uint16_t Store(float v) { return FloatToBf16(v); }
};

template <typename C>
__device__ C Combine(RedOp op, C a, C b) {
  if constexpr (std::is_integral_v<C>) {
    using W = WrapType<C>;
    if (op == RedOp::kProd) return static_cast<C>(static_cast<W>(a) * static_cast<W>(b));
    if (op == RedOp::kMax) return a > b ? a : b;
    if (op == RedOp::kMin) return a < b ? a : b;
    return static_cast<C>(static_cast<W>(a) + static_cast<W>(b));  // sum, avg
  } else {
    if (op == RedOp::kProd) return a * b;
    if (op == RedOp::kMax) return a > b ? a : b;
    if (op == RedOp::kMin) return a < b ? a : b;
    return a + b;
  }
}

// Grid-stride bodies: the __global__ templates below and the module's
// extern "C" entries are each one call of these.
template <typename E>
__device__ __forceinline__ void ReduceBody(RedOp op, const typename E::Storage* a,
                                           const typename E::Storage* b,
                                           typename E::Storage* out, size_t n) {
  size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n; i += stride)
    out[i] = E::Store(Combine(op, E::Load(a[i]), E::Load(b[i])));
}

template <typename E>
__device__ __forceinline__ void DivideBody(typename E::Storage* buf, size_t n, int divisor) {
  using C = typename E::Compute;
  size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += stride) {
    if constexpr (std::is_integral_v<C>) {
      using D = std::common_type_t<C, int>;
      buf[i] = static_cast<C>(buf[i] / static_cast<D>(divisor));
    } else {
      buf[i] = E::Store(E::Load(buf[i]) / static_cast<C>(divisor));
    }
  }
}

template <typename E>
__global__ void ReduceKernel(RedOp op, const typename E::Storage* a,
                             const typename E::Storage* b, typename E::Storage* out, size_t n) {
  ReduceBody<E>(op, a, b, out, n);
}

template <typename E>
__global__ void DivideKernel(typename E::Storage* buf, size_t n, int divisor) {
  DivideBody<E>(buf, n, divisor);
}

}  // namespace sieve::kernels::reduce_device

#endif  // SIEVE_KERNELS_CUDA_REDUCE_DEVICE_CUH_
