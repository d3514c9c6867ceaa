// Chain broadcast and reduce. Position p of a rank is its distance from the
// chain's start; messages only go from position p to p+1.
#include "algo/chain.h"

#include <algorithm>
#include <vector>

#include "algo/ring_pattern.h"

namespace sieve::algo {

Status RunChainBroadcast(Channel& ch, void* data, size_t bytes, int root, size_t segment_bytes) {
  const int n = ch.size(), rank = ch.rank();
  const int pos = Mod(rank - root, n);  // root at 0
  const int next = pos + 1 < n ? Mod(rank + 1, n) : -1;
  const int prev = pos > 0 ? Mod(rank - 1, n) : -1;
  size_t segments = std::max<size_t>(1, (bytes + segment_bytes - 1) / segment_bytes);
  char* base = static_cast<char*>(data);
  std::vector<Channel::Handle> recvs(segments);
  if (prev >= 0) {
    for (size_t s = 0; s < segments; ++s) {
      size_t b, e;
      SegmentRange(bytes, segments, s, &b, &e);
      SIEVE_RETURN_IF_ERROR(ch.Recv(prev, base + b, e - b, &recvs[s]));
    }
  }
  for (size_t s = 0; s < segments; ++s) {
    size_t b, e;
    SegmentRange(bytes, segments, s, &b, &e);
    if (prev >= 0) SIEVE_RETURN_IF_ERROR(ch.Wait(recvs[s]));
    if (next >= 0) SIEVE_RETURN_IF_ERROR(ch.Send(next, base + b, e - b));
  }
  return ch.WaitAll();
}

Status RunChainReduce(Channel& ch, Codec& codec, size_t count, int root, size_t segment_bytes) {
  const int n = ch.size(), rank = ch.rank();
  const int pos = Mod(rank - root - 1, n);  // root+1 starts (0), root ends (n-1)
  const int next = pos + 1 < n ? Mod(rank + 1, n) : -1;
  const int prev = pos > 0 ? Mod(rank - 1, n) : -1;
  size_t segments =
      std::max<size_t>(1, (codec.WireBytes(count, n) + segment_bytes - 1) / segment_bytes);
  // Receive everything up front: the partial from prev carries pos contributions.
  ScratchAllocator* alloc = codec.scratch_allocator();
  ScratchBuffer scratch(alloc);
  if (prev >= 0) SIEVE_RETURN_IF_ERROR(scratch.Reserve(codec.WireBytes(count, pos) + segments));
  std::vector<Channel::Handle> recvs(segments);
  std::vector<size_t> offsets(segments + 1, 0);
  for (size_t s = 0; s < segments; ++s) {
    size_t b, e;
    SegmentRange(count, segments, s, &b, &e);
    offsets[s + 1] = offsets[s] + (prev >= 0 ? codec.WireBytes(e - b, pos) : 0);
    if (prev >= 0)
      SIEVE_RETURN_IF_ERROR(ch.Recv(prev, scratch.data() + offsets[s], offsets[s + 1] - offsets[s],
                                    &recvs[s]));
  }
  std::vector<ScratchBuffer> send_scratch;
  for (size_t s = 0; s < segments; ++s) send_scratch.emplace_back(alloc);
  for (size_t s = 0; s < segments; ++s) {
    size_t b, e;
    SegmentRange(count, segments, s, &b, &e);
    if (prev >= 0) {
      SIEVE_RETURN_IF_ERROR(ch.Wait(recvs[s]));
      codec.ReduceInto(b, e - b, pos, scratch.data() + offsets[s], /*first=*/true);
    }
    if (next < 0) {  // the root: work holds all n contributions
      if (prev < 0) codec.LoadInput(b, e - b);
      codec.Finalize(b, e - b);
      continue;
    }
    if (codec.EncodeUsesScratch())
      SIEVE_RETURN_IF_ERROR(send_scratch[s].Reserve(codec.WireBytes(e - b, pos + 1)));
    const void* wire = codec.Encode(b, e - b, pos + 1, send_scratch[s].data());
    SIEVE_RETURN_IF_ERROR(ch.Send(next, wire, codec.WireBytes(e - b, pos + 1)));
  }
  return ch.WaitAll();
}

}  // namespace sieve::algo
