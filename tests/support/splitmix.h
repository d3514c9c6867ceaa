// splitmix64: the tests' generator of input bits from (seed, rank, index), cheap to recompute
// on any rank, so every process and the reference derive the same inputs without sharing them.
#ifndef SIEVE_TESTS_SUPPORT_SPLITMIX_H_
#define SIEVE_TESTS_SUPPORT_SPLITMIX_H_

#include <cstdint>

namespace sieve_test {

constexpr uint64_t kGoldenGamma = 0x9e3779b97f4a7c15ull;

// The output function: every input bit moves every output bit.
inline uint64_t SplitMixFinalize(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// One step of the generator from state x: advance by the golden gamma, then finalize.
inline uint64_t SplitMix(uint64_t x) { return SplitMixFinalize(x + kGoldenGamma); }

}  // namespace sieve_test

#endif  // SIEVE_TESTS_SUPPORT_SPLITMIX_H_
