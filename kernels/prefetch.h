// Software prefetch for the kernels' streaming loops: at 64 MiB the quantizers and the
// masked gathers waited on memory without it (docs/bench/pipeline.md). Internal to kernels/.
#ifndef SIEVE_KERNELS_PREFETCH_H_
#define SIEVE_KERNELS_PREFETCH_H_

#include <cstdint>

namespace sieve::kernels {

// How far ahead of its loads a streaming loop asks for its input: 1024 float32.
constexpr uint64_t kPrefetchBytes = 4096;

// Asks for the cache line `bytes` past `p`. Near a buffer's end the address lies past it:
// it is formed as an integer, and a prefetch never faults.
inline __attribute__((always_inline)) void PrefetchPast(const void* p, uint64_t bytes) {
  __builtin_prefetch(reinterpret_cast<const void*>(reinterpret_cast<uintptr_t>(p) + bytes));
}

}  // namespace sieve::kernels

#endif  // SIEVE_KERNELS_PREFETCH_H_
