// The ring: reduce-scatter and/or all-gather over a codec, chunked and
// pipelined by segments.
#ifndef SIEVE_ALGO_RING_H_
#define SIEVE_ALGO_RING_H_

#include <memory>
#include <vector>

#include "algo/channel.h"
#include "algo/codec.h"

namespace sieve::algo {

struct RingOptions {
  bool reduce_scatter = true;  // combine: afterwards rank r holds chunk r complete
  bool all_gather = true;      // distribute: afterwards every rank holds every chunk
  size_t segment_bytes = 512 << 10;
  size_t inflight_bytes = 2 << 20;  // segments in flight at once: this / segment_bytes (>= 2)
};

// How many segments each chunk is cut into (the same on every rank): as many
// as the largest final wire image needs at options.segment_bytes each.
size_t RingSegments(const Codec& codec, const std::vector<size_t>& bounds, int n,
                    const RingOptions& options);

// Runs the ring over the chunks [bounds[c], bounds[c+1]) (n+1 entries).
// With reduce_scatter, each chunk is Finalize()d on its owner; with both
// phases every range is Deliver()ed once on every rank. Without it,
// chunk r must already be complete in work on rank r. A codec whose status()
// fails ends the ring with that failure.
Status RunRing(Channel& channel, Codec& codec, const std::vector<size_t>& bounds,
               const RingOptions& options);

// The same ring driven one step at a time, so that a caller can interleave
// several rings (each on its own channel) and never block on one of them:
//   Start(); while (!Idle()) { wait until Ready(); Advance(); } Finish();
// RunRing is exactly that loop with blocking waits.
class Ring {
 public:
  Ring(Channel& channel, Codec& codec, std::vector<size_t> bounds, const RingOptions& options);
  ~Ring();
  Ring(const Ring&) = delete;
  Ring& operator=(const Ring&) = delete;

  // Posts the first window of segments (one rank: loads and finalizes its input).
  Status Start();
  // True once every segment has absorbed its last step (sends may be in flight).
  bool Idle() const;
  // True when Advance() would not block: the next receive has arrived and the
  // sends whose buffers the next step reuses are complete.
  bool Ready() const;
  // Absorbs the next arrived segment and posts its next step (waits if not Ready).
  Status Advance();
  // Waits for every send still in flight.
  Status Finish();

 private:
  class Run;
  std::unique_ptr<Run> run_;
};

}  // namespace sieve::algo

#endif  // SIEVE_ALGO_RING_H_
