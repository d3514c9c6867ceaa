// The one-shot all-reduce: every rank sends its whole input to every other
// rank at once and adds all n contributions itself, in rank order (rank 0's
// first), so every rank computes the same bits. It pays one one-way delay
// where the direct exchange pays two, for (n-1) x the input's bytes per rank
// instead of 2(n-1)/n: the choice for small calls on links with latency
// (plan/link_model.h). Only for codecs whose OneShot() is true.
#ifndef SIEVE_ALGO_ONE_SHOT_H_
#define SIEVE_ALGO_ONE_SHOT_H_

#include "algo/channel.h"
#include "algo/codec.h"

namespace sieve::algo {

// All-reduce of [0, count): Finalize()d and Deliver()ed once on every rank.
Status RunOneShot(Channel& channel, Codec& codec, size_t count);

}  // namespace sieve::algo

#endif  // SIEVE_ALGO_ONE_SHOT_H_
