// Block-scaled symmetric integers: the quantizer of the quantized all-gather
// (sieveAllGatherQuantized, issue 20). Per block of kBlockQuantBlock elements,
// s = m / Q in float32 (m = max |x| over the block, Q = 2^(bits-1) - 1: 127 for
// int8, 7 for int4), q = round-to-nearest-even(x / s) clamped to [-Q, Q], and
// the decoded value is q * s in float32, rounded to the datatype. Deterministic:
// every rank that decodes the same bytes writes the same result. A block with a
// NaN or an infinity has s = NaN (every element decodes to NaN); m = 0 gives
// s = 0 and zeros. Error: |decoded - x| <= s / 2 + u (|x| + s) + 2^-25 with
// u = 2^-22 (float32), 2^-10 (float16), 2^-7 (bfloat16) (include/sieve.h).
//
// Encoded layout of `count` elements: ceil(count / kBlockQuantBlock) float32
// scales (little-endian, unaligned), then the codes: int8 one per byte, or int4
// two per byte (element 2i in the low nibble, 2i + 1 in the high one, two's
// complement; a last odd element leaves the high nibble 0).
#ifndef SIEVE_KERNELS_BLOCK_QUANT_H_
#define SIEVE_KERNELS_BLOCK_QUANT_H_

#include <cstddef>

#include "kernels/dtype.h"

namespace sieve::kernels {

constexpr size_t kBlockQuantBlock = 256;

// The per-element formulas, shared with the CUDA kernels
// (kernels/cuda/block_quant_device.cuh) so both write the same bytes.
// Q: the largest code at `bits`.
SIEVE_HD inline int BlockQuantMaxCode(int bits) { return (1 << (bits - 1)) - 1; }
// The scale of a block from the bits of its largest magnitude (|x| as a uint32,
// so that the max is exact and order-free; a NaN or an infinity ranks above
// every number): m / Q, or the quiet NaN when the block is not finite.
SIEVE_HD inline float BlockQuantScaleOfBits(uint32_t max_magnitude_bits, int bits) {
  if (max_magnitude_bits >= 0x7f800000u) {
    const uint32_t nan = 0x7fc00000u;
    float s;
    memcpy(&s, &nan, 4);
    return s;
  }
  float m;
  memcpy(&m, &max_magnitude_bits, 4);
  return m / static_cast<float>(BlockQuantMaxCode(bits));
}
// The code of x against its block's scale s > 0: x / s rounded to nearest even,
// clamped to [-Q, Q] (a scale of 0 or NaN gives every element code 0).
SIEVE_HD inline int BlockQuantCode(float x, float s, int bits) {
  if (!(s > 0.0f)) return 0;
  const float q = static_cast<float>(BlockQuantMaxCode(bits));
  return static_cast<int>(fminf(q, fmaxf(-q, rintf(x / s))));
}
// The code of element j in `codes` (int8 one per byte, or two's complement int4
// two per byte, element 2i in the low nibble).
SIEVE_HD inline int BlockQuantCodeAt(const unsigned char* codes, size_t j, int bits) {
  if (bits == 8) return static_cast<int8_t>(codes[j]);
  const int nibble = (codes[j / 2] >> (4 * (j % 2))) & 0xf;
  return nibble >= 8 ? nibble - 16 : nibble;
}
// The decoded value of `code` (the quiet NaN, whatever the code, in a NaN block).
SIEVE_HD inline float BlockQuantValue(int code, float s) {
  return s == s ? static_cast<float>(code) * s : s;
}

// Bytes of the encoding of `count` elements at `bits` (4 or 8).
size_t BlockQuantBytes(size_t count, int bits);
// in: `count` elements of dtype (float32, float16 or bfloat16).
void BlockQuantEncode(DType dtype, const void* in, size_t count, int bits, void* out);
// out: `count` elements of dtype.
void BlockQuantDecode(DType dtype, const void* in, size_t count, int bits, void* out);

}  // namespace sieve::kernels

#endif  // SIEVE_KERNELS_BLOCK_QUANT_H_
