// Seconds on the monotonic clock, as a double: what the transports' deadlines and delays are
// computed in (differences only; the origin is arbitrary).
#ifndef SIEVE_CORE_CLOCK_H_
#define SIEVE_CORE_CLOCK_H_

#include <chrono>

namespace sieve {

inline double MonotonicSeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace sieve

#endif  // SIEVE_CORE_CLOCK_H_
