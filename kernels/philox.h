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

// Sieve's stream for ternary quantization: 16 random bits per element, plus 16
// more for the rare element whose first 16 do not decide (ternary.h). Element j
// of rank `rank` at step `step` under `seed` takes half (j & 1) (the low half
// for even j) of word ((j >> 1) & 3) of
//   Philox4x32-10(counter = {(j >> 3) | t * 2^31, rank, lo32(step), hi32(step)},
//                 key = {lo32(seed), hi32(seed)})
// with t = 0 for its first 16 bits and t = 1 for the refinement. One evaluation
// serves eight consecutive elements: its four words, read as eight little-endian
// 16-bit numbers, are the bits of elements 8m .. 8m+7 in order. Distinct
// (j, rank, step, t) never share bits while j < 2^34 (callers enforce that bound).
struct PhiloxStream {
  uint64_t seed = 0;
  uint32_t rank = 0;
  uint64_t step = 0;
};

constexpr uint64_t kPhiloxMaxElements = uint64_t{1} << 34;
constexpr uint32_t kPhiloxRefine = 0x80000000u;  // counter word 0 of the refinement stream

// The evaluation of elements 8 * oct .. 8 * oct + 7 (refine: their refinement bits).
SIEVE_HD inline Philox4 PhiloxOct(const PhiloxStream& s, uint64_t oct, bool refine = false) {
  Philox4 c{{static_cast<uint32_t>(oct) | (refine ? kPhiloxRefine : 0u), s.rank,
             static_cast<uint32_t>(s.step), static_cast<uint32_t>(s.step >> 32)}};
  return Philox4x32x10(c, static_cast<uint32_t>(s.seed), static_cast<uint32_t>(s.seed >> 32));
}

// Element j's 16 bits of its oct's evaluation r.
SIEVE_HD inline uint32_t PhiloxHalf(const Philox4& r, uint64_t j) {
  return (r.v[(j >> 1) & 3] >> (16 * (j & 1))) & 0xffffu;
}

}  // namespace sieve::kernels

#endif  // SIEVE_KERNELS_PHILOX_H_
