// Masks for the masked-mode tests: seeded random masks of a given density (the
// same on every rank for the same seed), their bitmap form, and the expected
// masked all-reduce (the dense reference, zeroed where the mask is clear).
#ifndef SIEVE_TESTS_SUPPORT_MASK_REFERENCE_H_
#define SIEVE_TESTS_SUPPORT_MASK_REFERENCE_H_

#include <cstdint>
#include <vector>

#include "sieve.h"

namespace sieve_test {

// One byte per element, 1 = kept, each kept with probability `density`.
std::vector<uint8_t> RandomMask(uint64_t seed, size_t count, double density);
// The same mask as sieveMaskBitmap bytes (bit j of byte j/8, LSB first).
std::vector<uint8_t> ToBitmap(const std::vector<uint8_t>& mask);
size_t Nnz(const std::vector<uint8_t>& mask);

// ExpectedReduction over FillInput(seed, r, ...) where mask[j] != 0, zero elsewhere.
void ExpectedMasked(uint64_t seed, int nranks, sieveDataType_t dtype, sieveRedOp_t op,
                    const std::vector<uint8_t>& mask, void* expected);

}  // namespace sieve_test

#endif  // SIEVE_TESTS_SUPPORT_MASK_REFERENCE_H_
