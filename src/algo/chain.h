// Pipelined chains rooted anywhere: broadcast flows root -> root+1 -> ... and
// reduce flows root+1 -> ... -> root-1 -> root, segment by segment, so each
// link carries the data once and all links work at the same time.
#ifndef SIEVE_ALGO_CHAIN_H_
#define SIEVE_ALGO_CHAIN_H_

#include "algo/channel.h"
#include "algo/codec.h"

namespace sieve::algo {

// Copies `bytes` of root's `data` into `data` on every other rank.
Status RunChainBroadcast(Channel& channel, void* data, size_t bytes, int root,
                         size_t segment_bytes);

// Combines every rank's input through the codec; the root's work ends up final.
Status RunChainReduce(Channel& channel, Codec& codec, size_t count, int root,
                      size_t segment_bytes);

}  // namespace sieve::algo

#endif  // SIEVE_ALGO_CHAIN_H_
