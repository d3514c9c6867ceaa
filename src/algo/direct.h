// The direct all-reduce: a reduce-scatter and an all-gather in which every rank
// exchanges with every other rank at once, over a codec, pipelined by segments.
// It moves the ring's bytes (2(n-1)/n of the data each way per rank) but pays
// two one-way delays instead of the ring's 2(n-1): the choice for links with
// latency (plan/allreduce_choice.h decides).
#ifndef SIEVE_ALGO_DIRECT_H_
#define SIEVE_ALGO_DIRECT_H_

#include <memory>
#include <vector>

#include "algo/channel.h"
#include "algo/codec.h"
#include "algo/steps.h"

namespace sieve::algo {

struct DirectOptions {
  size_t segment_bytes = 512 << 10;  // largest piece of a chunk one message carries
  // Bytes a rank has in flight at once, over all its peers: segments start
  // while the earlier ones' bytes stay below this (at least 2 segments).
  size_t inflight_bytes = 2 << 20;
  // The exchange is the whole of its channel's call (RunDirect): once its last
  // messages are in, the verdict goes before the last segment's decoding
  // (Channel::Vouch). Not for steps interleaved with other work on a channel.
  bool vouch = false;
};

// All-reduce of the chunks [bounds[c], bounds[c+1]) (n+1 entries; rank c owns
// chunk c): every range is Finalize()d once on its owner and Deliver()ed once
// on every rank, like RunRing with both phases.
Status RunDirect(Channel& channel, Codec& codec, const std::vector<size_t>& bounds,
                 const DirectOptions& options);

// The same driven one step at a time (algo/steps.h), so a caller can
// interleave it with rings or other direct exchanges on other channels.
class Direct : public AllReduceSteps {
 public:
  Direct(Channel& channel, Codec& codec, std::vector<size_t> bounds, const DirectOptions& options);
  ~Direct() override;
  Direct(const Direct&) = delete;
  Direct& operator=(const Direct&) = delete;

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

#endif  // SIEVE_ALGO_DIRECT_H_
