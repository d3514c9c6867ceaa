// CUDA SumDivide: one grid-stride kernel per type with the CPU loop's arithmetic
// (explicitly rounded add and divide, so no contraction or fast division can
// change a bit). Launched on the caller's stream; never synchronizes.
#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/coverage_average_cuda.h"

namespace sieve::kernels {
namespace {

unsigned Blocks(size_t n) {
  size_t blocks = (n + 255) / 256;
  return static_cast<unsigned>(blocks < 65535 ? (blocks > 0 ? blocks : 1) : 65535);
}

struct F32 {
  using Storage = float;
  __device__ static Storage Apply(Storage a, Storage b, int d) {
    return __fdiv_rn(__fadd_rn(a, b), static_cast<float>(d));
  }
};
struct F64 {
  using Storage = double;
  __device__ static Storage Apply(Storage a, Storage b, int d) {
    return __ddiv_rn(__dadd_rn(a, b), static_cast<double>(d));
  }
};
struct Half {
  using Storage = uint16_t;
  __device__ static Storage Apply(Storage a, Storage b, int d) {
    return FloatToHalf(F32::Apply(HalfToFloat(a), HalfToFloat(b), d));
  }
};
struct Bf16 {
  using Storage = uint16_t;
  __device__ static Storage Apply(Storage a, Storage b, int d) {
    return FloatToBf16(F32::Apply(Bf16ToFloat(a), Bf16ToFloat(b), d));
  }
};

// Each element is read before it is written by the same thread: aliasing is harmless.
template <typename E>
__global__ void SumDivideKernel(const typename E::Storage* a, const typename E::Storage* b,
                                typename E::Storage* out, size_t n, int divisor) {
  size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n; i += stride)
    out[i] = E::Apply(a[i], b[i], divisor);
}

template <typename E>
int Launch(const void* a, const void* b, void* out, size_t n, int divisor, cudaStream_t s) {
  using T = typename E::Storage;
  SumDivideKernel<E><<<Blocks(n), 256, 0, s>>>(static_cast<const T*>(a), static_cast<const T*>(b),
                                               static_cast<T*>(out), n, divisor);
  return static_cast<int>(cudaGetLastError());
}

}  // namespace

int SumDivideCuda(DType dtype, const void* a, const void* b, void* out, size_t n, int divisor,
                  void* stream) {
  if (n == 0) return 0;
  if (divisor < 1) return static_cast<int>(cudaErrorInvalidValue);
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  switch (dtype) {
    case DType::kFloat32:
      return Launch<F32>(a, b, out, n, divisor, s);
    case DType::kFloat64:
      return Launch<F64>(a, b, out, n, divisor, s);
    case DType::kFloat16:
      return Launch<Half>(a, b, out, n, divisor, s);
    case DType::kBfloat16:
      return Launch<Bf16>(a, b, out, n, divisor, s);
    default:
      return static_cast<int>(cudaErrorInvalidValue);
  }
}

}  // namespace sieve::kernels
