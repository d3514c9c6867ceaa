// The one-shot all-reduce: every rank sends its whole input to every other
// rank at once and adds all n contributions itself, in rank order (rank 0's
// first), so every rank computes the same bits. It pays one one-way delay
// where the direct exchange pays two, for (n-1) x the input's bytes per rank
// instead of 2(n-1)/n: the choice for small calls on links with latency, and
// for a compressed call whose images are small against the link's
// bandwidth-delay product (plan/link_model.h). Only for codecs whose OneShot()
// is true.
#ifndef SIEVE_ALGO_ONE_SHOT_H_
#define SIEVE_ALGO_ONE_SHOT_H_

#include <cstddef>
#include <vector>

#include "algo/channel.h"
#include "algo/codec.h"

namespace sieve::algo {

// Element bounds of the one-shot's messages: ranges whose wire image of one
// contribution is at most `segment_bytes` (0: one range), the same on every rank
// (they depend on the count, the codec's sizes and the segment size only).
std::vector<size_t> OneShotSegments(const Codec& codec, size_t count, size_t segment_bytes);

// All-reduce of [0, count): every image goes as one message per segment
// (OneShotSegments), so each message is sent eagerly like a ring's piece (a
// rendezvous would cost a round trip); each segment is Finalize()d and
// Deliver()ed once on every rank as soon as all n contributions to it are in.
Status RunOneShot(Channel& channel, Codec& codec, size_t count, size_t segment_bytes = 0);

}  // namespace sieve::algo

#endif  // SIEVE_ALGO_ONE_SHOT_H_
