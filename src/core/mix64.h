// The splitmix64 finalizer: every input bit moves every output bit. The one mixing step of the
// agreement hashes (masks, subnet layouts, D2FT schedules), so equal inputs hash equal on every
// rank and a one-bit difference shows.
#ifndef SIEVE_CORE_MIX64_H_
#define SIEVE_CORE_MIX64_H_

#include <cstdint>

namespace sieve {

inline uint64_t Mix64(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

}  // namespace sieve

#endif  // SIEVE_CORE_MIX64_H_
