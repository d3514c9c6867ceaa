// One entry for the all-reduce algorithms over a codec: the ring, the tree, the
// direct exchange or the one-shot, as the plan chose (OpAlgo, which the fingerprint also
// carries), so every mode runs whichever was chosen the same way.
#ifndef SIEVE_ALGO_ALLREDUCE_H_
#define SIEVE_ALGO_ALLREDUCE_H_

#include "algo/channel.h"
#include "algo/codec.h"
#include "algo/op_header.h"
#include "algo/steps.h"

#include <memory>
#include <vector>

namespace sieve::algo {

struct AllReduceRun {
  // kRing, kTree, kDirect, kOneShot (codecs with OneShot()) or kOneShotValues (the
  // values codec, ternary/values_codec.h: one message per peer, whatever segment_bytes)
  OpAlgo algo = OpAlgo::kRing;
  size_t segment_bytes = 512 << 10;
  size_t inflight_bytes = 2 << 20;  // the ring's and the direct exchange's window
};

// All-reduce of [0, count) through the codec on every rank of the channel.
Status RunAllReduce(Channel& channel, Codec& codec, size_t count, const AllReduceRun& run);

// The ring or the direct exchange over the chunks `bounds`, to be driven step
// by step (the tree and the one-shot have no steps: they give the ring).
std::unique_ptr<AllReduceSteps> MakeSteps(Channel& channel, Codec& codec,
                                          std::vector<size_t> bounds, const AllReduceRun& run);

}  // namespace sieve::algo

#endif  // SIEVE_ALGO_ALLREDUCE_H_
