// A mask's local form: the caller's bitmap or byte mask normalized to one
// bitmap, its 64-bit agreement hash, and the kept-index list packing walks.
#ifndef SIEVE_MASK_MASK_BITS_H_
#define SIEVE_MASK_MASK_BITS_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/status.h"

namespace sieve::mask {

enum class Format { kBitmap = 0, kBytes = 1 };

// Words of a bitmap of `count` bits.
inline size_t BitmapWords(size_t count) { return (count + 63) / 64; }

// bits = the mask as ceil(count/64) words, bit j%64 of word j/64 for element j,
// bits past count cleared. Bitmap input: bit j of byte j/8, LSB first.
void Normalize(const void* mask, Format format, size_t count, std::vector<uint64_t>* bits);

// A 64-bit hash of (count, bits): equal masks hash equal; a flipped bit changes it.
uint64_t MaskHash(size_t count, const std::vector<uint64_t>& bits);

// The kept indices in increasing order. Fails when an index does not fit 32 bits.
Status BuildIndex(const std::vector<uint64_t>& bits, size_t count, std::vector<uint32_t>* idx);

}  // namespace sieve::mask

#endif  // SIEVE_MASK_MASK_BITS_H_
