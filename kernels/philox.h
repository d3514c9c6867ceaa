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

// Philox4x32's multipliers and key increments (Weyl constants).
constexpr uint32_t kPhiloxMul0 = 0xD2511F53u, kPhiloxMul1 = 0xCD9E8D57u;
constexpr uint32_t kPhiloxBump0 = 0x9E3779B9u, kPhiloxBump1 = 0xBB67AE85u;

// One round on the counter words c0..c3 under the round key (k0, k1).
SIEVE_HD inline void PhiloxRound(uint32_t& c0, uint32_t& c1, uint32_t& c2, uint32_t& c3,
                                 uint32_t k0, uint32_t k1) {
  const uint64_t p0 = static_cast<uint64_t>(kPhiloxMul0) * c0;
  const uint64_t p1 = static_cast<uint64_t>(kPhiloxMul1) * c2;
  c0 = static_cast<uint32_t>(p1 >> 32) ^ c1 ^ k0;
  c1 = static_cast<uint32_t>(p1);
  c2 = static_cast<uint32_t>(p0 >> 32) ^ c3 ^ k1;
  c3 = static_cast<uint32_t>(p0);
}

// The standard Philox4x32 with 10 rounds: counter c, key (k0, k1).
SIEVE_HD inline Philox4 Philox4x32x10(Philox4 c, uint32_t k0, uint32_t k1) {
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      k0 += kPhiloxBump0;
      k1 += kPhiloxBump1;
    }
    PhiloxRound(c.v[0], c.v[1], c.v[2], c.v[3], k0, k1);
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

// PhiloxOct's first two rounds see the oct only through counter word 0: the rest of
// the counter (rank, step) and the key are the stream's, the same for every oct. A batch
// takes what they contribute from the stream's head once and then spends one multiply
// per oct in each of those rounds instead of two (18 per evaluation, not 20). Round 1
// makes words (a0, a1) of the stream alone; round 2's product of a0 too, so its word 3.
struct PhiloxHead {
  uint32_t round1_x2;  // round 1's word 2 = hi(kPhiloxMul0 * c0) ^ round1_x2
  uint32_t round2_x0;  // round 2's word 0 = hi(kPhiloxMul1 * (round 1's word 2)) ^ round2_x0
  uint32_t round2_x2;  // round 2's word 2 = lo(kPhiloxMul0 * c0) ^ round2_x2
  uint32_t round2_w3;  // round 2's word 3
  uint32_t k0, k1;     // round 3's key
};
constexpr int kPhiloxTailRounds = 8;  // the rounds after the head's two

SIEVE_HD inline PhiloxHead PhiloxHeadOf(const PhiloxStream& s) {
  const uint32_t k0 = static_cast<uint32_t>(s.seed), k1 = static_cast<uint32_t>(s.seed >> 32);
  const uint64_t p1 = static_cast<uint64_t>(kPhiloxMul1) * static_cast<uint32_t>(s.step);
  const uint32_t a0 = static_cast<uint32_t>(p1 >> 32) ^ s.rank ^ k0;
  const uint32_t a1 = static_cast<uint32_t>(p1);
  const uint64_t q0 = static_cast<uint64_t>(kPhiloxMul0) * a0;
  PhiloxHead h;
  h.round1_x2 = static_cast<uint32_t>(s.step >> 32) ^ k1;
  h.round2_x0 = a1 ^ (k0 + kPhiloxBump0);
  h.round2_x2 = static_cast<uint32_t>(q0 >> 32) ^ (k1 + kPhiloxBump1);
  h.round2_w3 = static_cast<uint32_t>(q0);
  h.k0 = k0 + 2 * kPhiloxBump0;
  h.k1 = k1 + 2 * kPhiloxBump1;
  return h;
}

// The four words after rounds 1 and 2 of the evaluation whose counter word 0 is c0 (the
// oct's low 32 bits, with kPhiloxRefine for a refinement), from its stream's head.
SIEVE_HD inline Philox4 PhiloxHeadRounds(const PhiloxHead& h, uint32_t c0) {
  const uint64_t p0 = static_cast<uint64_t>(kPhiloxMul0) * c0;
  const uint64_t p1 =
      static_cast<uint64_t>(kPhiloxMul1) * (static_cast<uint32_t>(p0 >> 32) ^ h.round1_x2);
  return Philox4{{static_cast<uint32_t>(p1 >> 32) ^ h.round2_x0, static_cast<uint32_t>(p1),
                  static_cast<uint32_t>(p0) ^ h.round2_x2, h.round2_w3}};
}

// PhiloxOct's evaluation whose counter word 0 is c0, from its stream's head: the same
// four words.
SIEVE_HD inline Philox4 PhiloxFromHead(const PhiloxHead& h, uint32_t c0) {
  Philox4 c = PhiloxHeadRounds(h, c0);
  uint32_t k0 = h.k0, k1 = h.k1;
  for (int round = 0; round < kPhiloxTailRounds; ++round) {
    if (round > 0) {
      k0 += kPhiloxBump0;
      k1 += kPhiloxBump1;
    }
    PhiloxRound(c.v[0], c.v[1], c.v[2], c.v[3], k0, k1);
  }
  return c;
}

// Element j's 16 bits of its oct's evaluation r.
SIEVE_HD inline uint32_t PhiloxHalf(const Philox4& r, uint64_t j) {
  return (r.v[(j >> 1) & 3] >> (16 * (j & 1))) & 0xffffu;
}

}  // namespace sieve::kernels

#endif  // SIEVE_KERNELS_PHILOX_H_
