// Pure ring arithmetic (no I/O): neighbours, which chunk moves at which step,
// how chunks split into balanced ranges. Tested exhaustively for small n.
#ifndef SIEVE_ALGO_RING_PATTERN_H_
#define SIEVE_ALGO_RING_PATTERN_H_

#include <cstddef>
#include <vector>

namespace sieve::algo {

inline int Mod(long a, int n) { return static_cast<int>(((a % n) + n) % n); }
inline int RingNext(int rank, int n) { return Mod(rank + 1, n); }
inline int RingPrev(int rank, int n) { return Mod(rank - 1, n); }

// Reduce-scatter step k (0..n-2): send chunk r-k-1, receive chunk r-k-2 and
// combine it; after step n-2 rank r holds chunk r complete.
inline int RsSendChunk(int rank, int step, int n) { return Mod(rank - step - 1, n); }
inline int RsRecvChunk(int rank, int step, int n) { return Mod(rank - step - 2, n); }
// All-gather step k (0..n-2): send chunk r-k (own first), receive chunk r-k-1.
inline int AgSendChunk(int rank, int step, int n) { return Mod(rank - step, n); }
inline int AgRecvChunk(int rank, int step, int n) { return Mod(rank - step - 1, n); }

// Boundaries of `parts` near-equal ranges of `count` elements: parts+1 entries.
inline std::vector<size_t> BalancedSplit(size_t count, int parts) {
  std::vector<size_t> bounds(parts + 1);
  for (int i = 0; i <= parts; ++i)
    bounds[i] = static_cast<size_t>((static_cast<unsigned __int128>(count) * i) / parts);
  return bounds;
}

// Boundaries of `parts` blocks of exactly `block` elements.
inline std::vector<size_t> EqualBlocks(size_t block, int parts) {
  std::vector<size_t> bounds(parts + 1);
  for (int i = 0; i <= parts; ++i) bounds[i] = block * static_cast<size_t>(i);
  return bounds;
}

// Range [begin, end) of segment s of `segments` within a range of `len` elements.
inline void SegmentRange(size_t len, size_t segments, size_t s, size_t* begin, size_t* end) {
  *begin = static_cast<size_t>((static_cast<unsigned __int128>(len) * s) / segments);
  *end = static_cast<size_t>((static_cast<unsigned __int128>(len) * (s + 1)) / segments);
}

}  // namespace sieve::algo

#endif  // SIEVE_ALGO_RING_PATTERN_H_
