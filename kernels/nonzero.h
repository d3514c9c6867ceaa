// Zero-pattern kernels for the mask tracker: which elements are non-zero (bit
// patterns, so -0.0 and NaN count as non-zero and masking stays bit-exact), and
// whether any element outside a mask is non-zero.
#ifndef SIEVE_KERNELS_NONZERO_H_
#define SIEVE_KERNELS_NONZERO_H_

#include <cstddef>
#include <cstdint>

namespace sieve::kernels {

// bits[j/64] bit j%64 = element j has a non-zero bit pattern, j < count;
// ceil(count/64) words are written, bits past count are clear.
void NonzeroBitmap(size_t elem_size, const void* data, size_t count, uint64_t* bits);

// True if some element j < count whose bit in `mask` is clear is non-zero.
bool AnyNonzeroOutside(size_t elem_size, const void* data, const uint64_t* mask, size_t count);

}  // namespace sieve::kernels

#endif  // SIEVE_KERNELS_NONZERO_H_
