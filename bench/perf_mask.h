// sieve-perf's masked mode: the random mask of a given density, identical on
// every rank (a hash of the element index, no shared state needed).
#ifndef SIEVE_BENCH_PERF_MASK_H_
#define SIEVE_BENCH_PERF_MASK_H_

#include <stddef.h>
#include <stdint.h>

#include <vector>

namespace sieve {
namespace perf {

// One byte per element: 1 (kept) with probability `density`.
std::vector<uint8_t> RandomKeep(size_t count, double density, uint64_t seed);

}  // namespace perf
}  // namespace sieve

#endif  // SIEVE_BENCH_PERF_MASK_H_
