// The ring: reduce-scatter and/or all-gather over a codec, chunked and
// pipelined by segments.
#ifndef SIEVE_ALGO_RING_H_
#define SIEVE_ALGO_RING_H_

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

// Runs the ring over the chunks [bounds[c], bounds[c+1]) (n+1 entries).
// With reduce_scatter, each chunk is Finalize()d on its owner. Without it,
// chunk r must already be complete in work on rank r.
Status RunRing(Channel& channel, Codec& codec, const std::vector<size_t>& bounds,
               const RingOptions& options);

}  // namespace sieve::algo

#endif  // SIEVE_ALGO_RING_H_
