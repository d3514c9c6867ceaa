// An all-reduce driven one step at a time (the ring, the direct exchange), so a
// caller can interleave several, each on its own channel, and never block on
// one of them:
//   Start(); while (!Idle()) { wait until Ready(); Advance(); } Finish();
#ifndef SIEVE_ALGO_STEPS_H_
#define SIEVE_ALGO_STEPS_H_

#include "core/status.h"

namespace sieve::algo {

class AllReduceSteps {
 public:
  virtual ~AllReduceSteps() = default;
  // Posts the first window of segments (one rank: loads and finalizes its input).
  virtual Status Start() = 0;
  // True once every segment has absorbed its last step (sends may be in flight).
  virtual bool Idle() const = 0;
  // True when Advance() would not block.
  virtual bool Ready() const = 0;
  // Absorbs the next arrived segment and posts its next step (waits if not Ready).
  virtual Status Advance() = 0;
  // Waits for every send still in flight.
  virtual Status Finish() = 0;
};

}  // namespace sieve::algo

#endif  // SIEVE_ALGO_STEPS_H_
