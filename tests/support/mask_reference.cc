// Reference masks and expected masked results (see mask_reference.h).
#include "support/mask_reference.h"

#include <cstring>
#include <random>

#include "support/reference.h"

namespace sieve_test {

std::vector<uint8_t> RandomMask(uint64_t seed, size_t count, double density) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  std::vector<uint8_t> mask(count);
  for (size_t j = 0; j < count; ++j) mask[j] = u(rng) < density ? 1 : 0;
  return mask;
}

std::vector<uint8_t> ToBitmap(const std::vector<uint8_t>& mask) {
  std::vector<uint8_t> bits((mask.size() + 7) / 8, 0);
  for (size_t j = 0; j < mask.size(); ++j)
    if (mask[j] != 0) bits[j / 8] |= static_cast<uint8_t>(1u << (j % 8));
  return bits;
}

size_t Nnz(const std::vector<uint8_t>& mask) {
  size_t n = 0;
  for (uint8_t m : mask) n += m != 0;
  return n;
}

void ExpectedMasked(uint64_t seed, int nranks, sieveDataType_t dtype, sieveRedOp_t op,
                    const std::vector<uint8_t>& mask, void* expected) {
  const size_t es = TypeSize(dtype);
  ExpectedReduction(seed, nranks, dtype, op, 0, mask.size(), expected);
  for (size_t j = 0; j < mask.size(); ++j)
    if (mask[j] == 0) std::memset(static_cast<char*>(expected) + j * es, 0, es);
}

}  // namespace sieve_test
