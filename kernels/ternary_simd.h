// Wide (AVX2) building blocks of the ternary CPU kernels, internal to kernels/.
// Each computes exactly what the portable code in ternary.h computes, bit for
// bit: same Philox words, same float32 division and comparison per element.
// Callers check ActiveCpuIsa() >= CpuIsa::kAvx2 first.
#ifndef SIEVE_KERNELS_TERNARY_SIMD_H_
#define SIEVE_KERNELS_TERNARY_SIMD_H_

#include <cstdint>

#include "kernels/philox.h"

namespace sieve::kernels::simd {

// words[4*l + i] = PhiloxQuad(rng, q0 + l).v[i] for l < nquads (a multiple of 8).
void PhiloxQuadsAvx2(const PhiloxStream& rng, uint64_t q0, int nquads, uint32_t* words);

// The same with AVX-512 (callers check ActiveCpuIsa() >= CpuIsa::kAvx512).
void PhiloxQuadsAvx512(const PhiloxStream& rng, uint64_t q0, int nquads, uint32_t* words);

// q[i] = TernaryQuantizeOne(g[i], s, words[i]) for i < n (any n).
void TernaryQuantizeRunAvx2(const float* g, const uint32_t* words, int n, float s, int32_t* q);

// The 2-bit wire of q[0 .. n) (values in {-1, 0, 1}, n a multiple of 8): n / 4 bytes.
void TernaryPack2Avx2(const int32_t* q, int n, uint8_t* wire);

}  // namespace sieve::kernels::simd

#endif  // SIEVE_KERNELS_TERNARY_SIMD_H_
