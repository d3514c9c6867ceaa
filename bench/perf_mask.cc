// Random masks for sieve-perf --mode masked: element j is kept when a 64-bit
// hash of (seed, j), read as a fraction of 2^64, falls below the density.
#include "perf_mask.h"

namespace sieve {
namespace perf {

std::vector<uint8_t> RandomKeep(size_t count, double density, uint64_t seed) {
  std::vector<uint8_t> keep(count);
  const uint64_t threshold =
      density >= 1 ? ~uint64_t{0} : static_cast<uint64_t>(density * 18446744073709551616.0);
  for (size_t j = 0; j < count; ++j) {
    uint64_t x = (seed + j) * 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    x ^= x >> 31;
    keep[j] = density >= 1 || x < threshold ? 1 : 0;
  }
  return keep;
}

}  // namespace perf
}  // namespace sieve
