// Element types and reduction ops as kernels see them (values equal sieve.h's),
// plus float16/bfloat16 <-> float32 conversions shared by every kernel.
#ifndef SIEVE_KERNELS_DTYPE_H_
#define SIEVE_KERNELS_DTYPE_H_

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <math.h>

// Conversions below run on the host and, compiled by nvcc, on the device, so
// CPU and CUDA kernels round identically.
#ifdef __CUDACC__
#define SIEVE_HD __host__ __device__
#else
#define SIEVE_HD
#endif

namespace sieve::kernels {

enum class DType : int {
  kInt8 = 0, kUint8 = 1, kInt32 = 2, kUint32 = 3, kInt64 = 4, kUint64 = 5,
  kFloat16 = 6, kFloat32 = 7, kFloat64 = 8, kBfloat16 = 9,
};
constexpr int kNumDTypes = 10;

enum class RedOp : int { kSum = 0, kProd = 1, kMax = 2, kMin = 3, kAvg = 4 };
constexpr int kNumRedOps = 5;

// Bytes per element; 0 for a value outside the enum.
size_t DTypeSize(DType dtype);
// "float32", "bfloat16", ... ("?" for a bad value).
const char* DTypeName(DType dtype);
const char* RedOpName(RedOp op);
bool IsFloating(DType dtype);

// IEEE binary16 <-> float, round to nearest even; NaN stays NaN, overflow -> inf.
SIEVE_HD inline float HalfToFloat(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t man = h & 0x3ffu;
  uint32_t bits;
  if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (man << 13);  // inf / nan
  } else if (exp != 0) {
    bits = sign | ((exp + 112) << 23) | (man << 13);  // normal: rebias 15 -> 127
  } else if (man == 0) {
    bits = sign;  // signed zero
  } else {
    // subnormal half: value = man * 2^-24, exact in float
    float f = static_cast<float>(man) * 5.9604644775390625e-08f;
    std::memcpy(&bits, &f, 4);
    bits |= sign;
  }
  float out;
  std::memcpy(&out, &bits, 4);
  return out;
}

SIEVE_HD inline uint16_t FloatToHalf(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t abs = x & 0x7fffffffu;
  if (abs >= 0x7f800000u) {  // inf or nan
    return static_cast<uint16_t>(sign | 0x7c00u | (abs > 0x7f800000u ? 0x200u : 0u));
  }
  if (abs >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // rounds to inf
  if (abs < 0x38800000u) {  // result is subnormal or zero: round abs * 2^24 to an integer
    float a;
    std::memcpy(&a, &abs, 4);
    // adding 0.5 (as 2^-1 via magic) is done by rint in the default rounding mode (nearest even)
    float scaled = a * 16777216.0f;  // exact (power of two)
    uint32_t m = static_cast<uint32_t>(rintf(scaled));
    return static_cast<uint16_t>(sign | m);
  }
  // normal: drop 13 mantissa bits with round to nearest even
  uint32_t rounded = abs + 0xfffu + ((abs >> 13) & 1u);
  return static_cast<uint16_t>(sign | ((rounded - 0x38000000u) >> 13));
}

SIEVE_HD inline float Bf16ToFloat(uint16_t b) {
  uint32_t bits = static_cast<uint32_t>(b) << 16;
  float out;
  std::memcpy(&out, &bits, 4);
  return out;
}

SIEVE_HD inline uint16_t FloatToBf16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);  // quiet nan
  x += 0x7fffu + ((x >> 16) & 1u);
  return static_cast<uint16_t>(x >> 16);
}

}  // namespace sieve::kernels

#endif  // SIEVE_KERNELS_DTYPE_H_
