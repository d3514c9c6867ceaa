// Tree all-reduce, segmented so a long message still streams:
//   up:   for each segment, combine the children's wire images with our input,
//         then send the result (carrying our subtree's contributions) to the
//         parent; the root finalizes instead.
//   down: receive the final segment from the parent and send it to the children.
#include "algo/tree.h"

#include <algorithm>

#include "algo/ring_pattern.h"

namespace sieve::algo {

std::vector<int> TreeChildren(int rank, int n) {
  std::vector<int> children;
  for (int c = 2 * rank + 1; c <= 2 * rank + 2 && c < n; ++c) children.push_back(c);
  return children;
}

int TreeSubtreeSize(int rank, int n) {
  if (rank >= n) return 0;
  return 1 + TreeSubtreeSize(2 * rank + 1, n) + TreeSubtreeSize(2 * rank + 2, n);
}

Status RunTree(Channel& ch, Codec& codec, size_t count, size_t segment_bytes) {
  const int n = ch.size(), rank = ch.rank(), parent = TreeParent(rank);
  const std::vector<int> children = TreeChildren(rank, n);
  const int up_contributions = TreeSubtreeSize(rank, n);
  size_t segments = std::max<size_t>(1, (codec.WireBytes(count, n) + segment_bytes - 1) /
                                            segment_bytes);
  auto range = [&](size_t s, size_t* b, size_t* e) { SegmentRange(count, segments, s, b, e); };

  // Post every receive from the children up front; each child has its own scratch.
  ScratchAllocator* alloc = codec.scratch_allocator();
  std::vector<ScratchBuffer> child_scratch;
  for (size_t c = 0; c < children.size(); ++c) child_scratch.emplace_back(alloc);
  std::vector<std::vector<Channel::Handle>> child_recv(children.size(),
                                                       std::vector<Channel::Handle>(segments));
  for (size_t c = 0; c < children.size(); ++c) {
    int contributions = TreeSubtreeSize(children[c], n);
    SIEVE_RETURN_IF_ERROR(
        child_scratch[c].Reserve(codec.WireBytes(count, contributions) + segments));
    size_t offset = 0;
    for (size_t s = 0; s < segments; ++s) {
      size_t b, e;
      range(s, &b, &e);
      size_t bytes = codec.WireBytes(e - b, contributions);
      SIEVE_RETURN_IF_ERROR(
          ch.Recv(children[c], child_scratch[c].data() + offset, bytes, &child_recv[c][s]));
      offset += bytes;
    }
  }

  // Up: combine and pass on, segment by segment.
  std::vector<Channel::Handle> up_send(segments);
  std::vector<ScratchBuffer> send_scratch;
  for (size_t s = 0; s < segments; ++s) send_scratch.emplace_back(alloc);
  std::vector<size_t> child_offset(children.size(), 0);
  for (size_t s = 0; s < segments; ++s) {
    size_t b, e;
    range(s, &b, &e);
    for (size_t c = 0; c < children.size(); ++c) {
      SIEVE_RETURN_IF_ERROR(ch.Wait(child_recv[c][s]));
      int contributions = TreeSubtreeSize(children[c], n);
      codec.ReduceInto(b, e - b, contributions, child_scratch[c].data() + child_offset[c],
                       /*first=*/c == 0);
      child_offset[c] += codec.WireBytes(e - b, contributions);
    }
    if (parent < 0) {
      if (children.empty()) codec.LoadInput(b, e - b);
      codec.Finalize(b, e - b);
      codec.Deliver(b, e - b);
      continue;
    }
    if (codec.EncodeUsesScratch())
      SIEVE_RETURN_IF_ERROR(send_scratch[s].Reserve(codec.WireBytes(e - b, up_contributions)));
    const void* wire = codec.Encode(b, e - b, up_contributions, send_scratch[s].data());
    SIEVE_RETURN_IF_ERROR(
        ch.Send(parent, wire, codec.WireBytes(e - b, up_contributions), &up_send[s]));
  }

  // Down: receive the final result from the parent and forward it to the children.
  ScratchBuffer down_scratch(alloc);
  for (size_t s = 0; s < segments; ++s) {
    size_t b, e;
    range(s, &b, &e);
    if (parent >= 0) {
      size_t bytes = codec.WireBytes(e - b, n);
      // The up-send may still read work (or the in-place input) here: finish it first.
      SIEVE_RETURN_IF_ERROR(ch.Wait(up_send[s]));
      void* target = codec.DirectTarget(b, e - b);
      if (target == nullptr) {
        SIEVE_RETURN_IF_ERROR(down_scratch.Reserve(bytes));
        target = down_scratch.data();
      }
      Channel::Handle h;
      SIEVE_RETURN_IF_ERROR(ch.Recv(parent, target, bytes, &h));
      SIEVE_RETURN_IF_ERROR(ch.Wait(h));
      if (target == down_scratch.data()) codec.Decode(b, e - b, target);
      codec.Deliver(b, e - b);
    }
    if (children.empty()) continue;
    // One image of the final segment for every child: encoding it again per child
    // would rewrite the scratch while the first child's send may still read it.
    if (codec.EncodeUsesScratch())
      SIEVE_RETURN_IF_ERROR(send_scratch[s].Reserve(codec.WireBytes(e - b, n)));
    const void* wire = codec.Encode(b, e - b, n, send_scratch[s].data());
    for (int child : children)
      SIEVE_RETURN_IF_ERROR(ch.Send(child, wire, codec.WireBytes(e - b, n)));
  }
  return ch.WaitAll();
}

}  // namespace sieve::algo
