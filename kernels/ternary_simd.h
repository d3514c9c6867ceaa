// The AVX2 and AVX-512 entry points of the ternary CPU kernels (ternary_avx2.cc,
// ternary_avx512.cc), internal to kernels/: each computes exactly what the
// portable path computes, bit for bit. Callers check ActiveCpuIsa() first
// (kAvx512 for the *Avx512 ones, kAvx2 for the others); ternary.h documents the
// kernels they implement.
#ifndef SIEVE_KERNELS_TERNARY_SIMD_H_
#define SIEVE_KERNELS_TERNARY_SIMD_H_

#include <cstddef>
#include <cstdint>

#include "kernels/ternary.h"

namespace sieve::kernels::simd {

#define SIEVE_TERNARY_SIMD_ENTRIES(ISA)                                                          \
  void AbsMax##ISA(const TernarySource& src, size_t count, float* scales);                       \
  /* TernaryQuantizePack into 2 bits. */                                                         \
  void QuantizePack2##ISA(const TernarySource& src, size_t offset, size_t elems, uint8_t* wire); \
  /* TernaryQuantizeAdd into int8 work, wire of w <= 8 bits or none. */                          \
  void QuantizeAddInt8##ISA(const TernarySource& src, size_t offset, size_t elems,               \
                            const uint8_t* wire, int w, int8_t* work);                           \
  void FeedbackUpdate##ISA(const TernarySource& sent, size_t count, float* residual);            \
  /* The codes at src.levels > 1 levels, batch by batch (batch::QuantizeLevels). */              \
  void QuantizeLevels##ISA(const TernarySource& src, size_t offset, size_t elems,                \
                           void (*sink)(void*, size_t, const int8_t*, int), void* ctx);          \
  /* TernaryPack of int8 work in w <= 6 bits, TernaryUnpack in w <= 8. */                        \
  void PackInt8##ISA(const int8_t* work, size_t elems, int w, uint8_t* wire);                    \
  void UnpackInt8##ISA(const uint8_t* wire, size_t elems, int w, bool accumulate, int8_t* work); \
  /* stream: OutputStores::kStreaming. */                                                        \
  void DequantizeInt8##ISA(DType dtype, const int8_t* sums, size_t offset, size_t elems,         \
                           size_t block, const float* scales, int divisor, void* out,            \
                           bool stream);

SIEVE_TERNARY_SIMD_ENTRIES(Avx2)
SIEVE_TERNARY_SIMD_ENTRIES(Avx512)

#undef SIEVE_TERNARY_SIMD_ENTRIES

// TernaryDequantizeScatter with int8 sums: AVX-512 expands 16 kept values at a
// time, AVX2 eight through a lane permute.
void DequantizeScatterInt8Avx2(DType dtype, const int8_t* sums, size_t offset, size_t block,
                               const float* scales, int divisor, const uint64_t* bits, size_t begin,
                               size_t end, void* out, bool stream);
void DequantizeScatterInt8Avx512(DType dtype, const int8_t* sums, size_t offset, size_t block,
                                 const float* scales, int divisor, const uint64_t* bits,
                                 size_t begin, size_t end, void* out, bool stream);

// TernaryGatherSum of n 2-bit wire images into int8 sums.
void GatherSum2Avx2(const uint8_t* const* wires, int n, size_t elems, int8_t* sums);

// The Philox words of octs oct0 .. oct0 + 32 * batches - 1 (PhiloxOct), 32 octs at a
// time as the AVX2 / AVX-512 quantizers draw them, into words (4 per oct): for
// sieve-bench-kernels, the generator's own cost per element.
void PhiloxWordsAvx2(const PhiloxStream& rng, uint64_t oct0, size_t batches, uint32_t* words);
void PhiloxWordsAvx512(const PhiloxStream& rng, uint64_t oct0, size_t batches, uint32_t* words);

}  // namespace sieve::kernels::simd

#endif  // SIEVE_KERNELS_TERNARY_SIMD_H_
