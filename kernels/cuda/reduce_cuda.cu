// CUDA versions of Reduce/DivideBy: one grid-stride kernel per (type, op),
// the same per-element arithmetic as the CPU loops (see reduce.cc), so results
// are bit-identical. Launched on the caller's stream; never synchronizes.
#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "kernels/reduce_cuda.h"

namespace sieve::kernels {
namespace {

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

template <typename E>
__global__ void ReduceKernel(RedOp op, const typename E::Storage* a,
                             const typename E::Storage* b, typename E::Storage* out, size_t n) {
  size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n; i += stride)
    out[i] = E::Store(Combine(op, E::Load(a[i]), E::Load(b[i])));
}

template <typename E>
__global__ void DivideKernel(typename E::Storage* buf, size_t n, int divisor) {
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
