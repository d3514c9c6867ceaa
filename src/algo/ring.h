// The ring: reduce-scatter and/or all-gather over a codec, chunked and
// pipelined by segments.
#ifndef SIEVE_ALGO_RING_H_
#define SIEVE_ALGO_RING_H_

#include <memory>
#include <vector>

#include "algo/channel.h"
#include "algo/codec.h"
#include "algo/steps.h"

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

// The same ring driven one step at a time (algo/steps.h); RunRing is exactly
// that loop with blocking waits. Ready(): the next receive has arrived and the
// sends whose buffers the next step reuses are complete.
class Ring : public AllReduceSteps {
 public:
  Ring(Channel& channel, Codec& codec, std::vector<size_t> bounds, const RingOptions& options);
  ~Ring() override;
  Ring(const Ring&) = delete;
  Ring& operator=(const Ring&) = delete;

  Status Start() override;
  bool Idle() const override;
  bool Ready() const override;
  Status Advance() override;
  Status Finish() override;

 private:
  class Run;
  std::unique_ptr<Run> run_;
};

}  // namespace sieve::algo

#endif  // SIEVE_ALGO_RING_H_
