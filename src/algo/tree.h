// The tree: reduce up a binary tree to rank 0, then broadcast down. Two
// hops per level instead of 2(n-1) ring steps: the choice for small,
// latency-bound messages.
#ifndef SIEVE_ALGO_TREE_H_
#define SIEVE_ALGO_TREE_H_

#include <vector>

#include "algo/channel.h"
#include "algo/codec.h"

namespace sieve::algo {

// Binary tree over ranks 0..n-1 rooted at 0: parent (r-1)/2, children 2r+1, 2r+2.
inline int TreeParent(int rank) { return rank == 0 ? -1 : (rank - 1) / 2; }
std::vector<int> TreeChildren(int rank, int n);
// Number of ranks in the subtree rooted at `rank` (its contributions going up).
int TreeSubtreeSize(int rank, int n);

// All-reduce of [0, count) through the codec; every rank ends with the final result.
Status RunTree(Channel& channel, Codec& codec, size_t count, size_t segment_bytes);

}  // namespace sieve::algo

#endif  // SIEVE_ALGO_TREE_H_
