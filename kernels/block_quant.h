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

// Bytes of the encoding of `count` elements at `bits` (4 or 8).
size_t BlockQuantBytes(size_t count, int bits);
// in: `count` elements of dtype (float32, float16 or bfloat16).
void BlockQuantEncode(DType dtype, const void* in, size_t count, int bits, void* out);
// out: `count` elements of dtype.
void BlockQuantDecode(DType dtype, const void* in, size_t count, int bits, void* out);

}  // namespace sieve::kernels

#endif  // SIEVE_KERNELS_BLOCK_QUANT_H_
