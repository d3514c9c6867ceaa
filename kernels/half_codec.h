// Branch-free float16/bfloat16 <-> float32 conversions for vectorized host loops,
// shared by the kernels that widen 16-bit floats in chunks (reduce, coverage average).
// Internal to kernels/; bit-identical to dtype.h's scalar conversions.
#ifndef SIEVE_KERNELS_HALF_CODEC_H_
#define SIEVE_KERNELS_HALF_CODEC_H_

#include <cstdint>
#include <cstring>

#include "kernels/dtype.h"

// Forced inline so each use compiles with the instruction set of the function it
// lands in (the kernels build baseline and AVX2 entry points from one source).
#define SIEVE_HALF_INLINE inline __attribute__((always_inline))

namespace sieve::kernels {

SIEVE_HALF_INLINE uint32_t FloatBits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

SIEVE_HALF_INLINE float BitsFloat(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// All-ones when `cond`; selecting through masks keeps GCC from turning the choice back
// into a branch around the float math (which -ftrapping-math then will not if-convert).
SIEVE_HALF_INLINE uint32_t Pick(bool cond, uint32_t if_true, uint32_t if_false) {
  const uint32_t mask = 0u - static_cast<uint32_t>(cond);
  return (if_true & mask) | (if_false & ~mask);
}

// Branch-free restatements of dtype.h's HalfToFloat/FloatToHalf (every case computed,
// one selected) so the conversion loops vectorize; the tests hold them bit-identical
// to the originals, which the reference uses.
struct HalfCodec {
  SIEVE_HALF_INLINE static float Load(uint16_t h) {
    const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
    const uint32_t em = h & 0x7fffu;
    const uint32_t normal = (em << 13) + (112u << 23);  // rebias 15 -> 127
    const uint32_t special = (em << 13) | 0x70000000u;  // inf / nan
    const uint32_t sub = FloatBits(static_cast<float>(static_cast<int32_t>(em)) * 0x1p-24f);
    const uint32_t bits = Pick(em >= 0x7c00u, special, Pick(em >= 0x0400u, normal, sub));
    return BitsFloat(sign | bits);
  }
  SIEVE_HALF_INLINE static uint16_t Store(float f) {
    const uint32_t x = FloatBits(f);
    const uint32_t sign = (x >> 16) & 0x8000u;
    const uint32_t abs = x & 0x7fffffffu;
    const uint32_t normal = (abs + 0xfffu + ((abs >> 13) & 1u) - 0x38000000u) >> 13;
    // abs * 2^24 < 2^10 for half subnormals; adding 2^23 leaves its round-to-nearest-even
    // integer value in the low mantissa bits (what rint does, minus the call).
    const uint32_t sub = FloatBits(BitsFloat(abs) * 0x1p24f + 0x1p23f) - 0x4b000000u;
    const uint32_t special = abs > 0x7f800000u ? 0x7e00u : 0x7c00u;  // nan, else inf
    const uint32_t bits = Pick(abs >= 0x477ff000u, special, Pick(abs < 0x38800000u, sub, normal));
    return static_cast<uint16_t>(sign | bits);
  }
};

struct Bf16Codec {
  SIEVE_HALF_INLINE static float Load(uint16_t v) { return Bf16ToFloat(v); }
  SIEVE_HALF_INLINE static uint16_t Store(float f) { return FloatToBf16(f); }
};


}  // namespace sieve::kernels

#undef SIEVE_HALF_INLINE

#endif  // SIEVE_KERNELS_HALF_CODEC_H_
