// Philox 4x32-10 (Salmon et al., SC'11): a counter-based generator, the same
// bits on host and device, plus Sieve's keying of it for ternary quantization.
#ifndef SIEVE_KERNELS_PHILOX_H_
#define SIEVE_KERNELS_PHILOX_H_

#include <cstdint>

#include "kernels/dtype.h"

namespace sieve::kernels {

struct Philox4 {
  uint32_t v[4];
};

SIEVE_HD inline void PhiloxMulHiLo(uint32_t a, uint32_t b, uint32_t* hi, uint32_t* lo) {
  uint64_t p = static_cast<uint64_t>(a) * b;
  *hi = static_cast<uint32_t>(p >> 32);
  *lo = static_cast<uint32_t>(p);
}

// The standard Philox4x32 with 10 rounds: counter c, key (k0, k1).
SIEVE_HD inline Philox4 Philox4x32x10(Philox4 c, uint32_t k0, uint32_t k1) {
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      k0 += 0x9E3779B9u;
      k1 += 0xBB67AE85u;
    }
    uint32_t hi0, lo0, hi1, lo1;
    PhiloxMulHiLo(0xD2511F53u, c.v[0], &hi0, &lo0);
    PhiloxMulHiLo(0xCD9E8D57u, c.v[2], &hi1, &lo1);
    c = Philox4{{hi1 ^ c.v[1] ^ k0, lo1, hi0 ^ c.v[3] ^ k1, lo0}};
  }
  return c;
}

// Sieve's stream for ternary quantization. Element j of rank `rank` at step
// `step` under `seed` uses word (j & 3) of
//   Philox4x32-10(counter = {lo32(j >> 2), rank, lo32(step), hi32(step)},
//                 key = {lo32(seed), hi32(seed)})
// so four consecutive elements share one evaluation. Distinct (j, rank, step)
// never share a word while j < 2^34 (callers enforce that bound).
struct PhiloxStream {
  uint64_t seed = 0;
  uint32_t rank = 0;
  uint64_t step = 0;
};

constexpr uint64_t kPhiloxMaxElements = uint64_t{1} << 34;

SIEVE_HD inline Philox4 PhiloxQuad(const PhiloxStream& s, uint64_t quad) {
  Philox4 c{{static_cast<uint32_t>(quad), s.rank, static_cast<uint32_t>(s.step),
             static_cast<uint32_t>(s.step >> 32)}};
  return Philox4x32x10(c, static_cast<uint32_t>(s.seed), static_cast<uint32_t>(s.seed >> 32));
}

// Uniform in [0, 1): the top 24 bits of a word times 2^-24 (exact in float32).
SIEVE_HD inline float PhiloxUniform(uint32_t word) {
  return static_cast<float>(word >> 8) * 5.9604644775390625e-08f;
}

}  // namespace sieve::kernels

#endif  // SIEVE_KERNELS_PHILOX_H_
