// The lane order that compresses eight 32-bit lanes under a mask (AVX2 has no
// vcompress): entry m (< 256) holds, a nibble per lane, the positions of m's set
// bits in increasing order; vpermps with it (after a per-lane shift by 4i)
// brings the kept lanes to the front. Internal to kernels/.
#ifndef SIEVE_KERNELS_COMPRESS_TABLE_H_
#define SIEVE_KERNELS_COMPRESS_TABLE_H_

#include <cstdint>

namespace sieve::kernels::simd {

struct CompressTable {
  uint32_t v[256] = {};
  constexpr CompressTable() {
    for (uint32_t m = 0; m < 256; ++m)
      for (uint32_t i = 0, o = 0; i < 8; ++i)
        if ((m >> i) & 1u) v[m] |= i << (4 * o++);
  }
};
alignas(64) inline constexpr CompressTable kCompress{};

}  // namespace sieve::kernels::simd

#endif  // SIEVE_KERNELS_COMPRESS_TABLE_H_
