// One-shot all-reduce (algo/one_shot.h). Our input's image is copied once into
// scratch, segment by segment, and each segment is sent from there as soon as
// it is made, so work may be written (in place: over the input) while the sends
// are in flight; each peer's image is received into its own scratch and a
// segment is added as soon as every lower rank's term of it is in.
#include "algo/one_shot.h"

#include <algorithm>
#include <vector>

#include "algo/ring_pattern.h"

namespace sieve::algo {

std::vector<size_t> OneShotSegments(const Codec& codec, size_t count, size_t segment_bytes) {
  const size_t total = codec.WireBytes(count, 1);
  size_t segments = 1;
  if (segment_bytes > 0 && total > segment_bytes)
    segments = std::min(count, (total + segment_bytes - 1) / segment_bytes);
  std::vector<size_t> bounds(segments + 1);
  for (size_t s = 0; s < segments; ++s) SegmentRange(count, segments, s, &bounds[s], &bounds[s + 1]);
  return bounds;
}

Status RunOneShot(Channel& ch, Codec& codec, size_t count, size_t segment_bytes) {
  const int n = ch.size(), rank = ch.rank();
  if (n == 1) {
    codec.LoadInput(0, count);
    codec.Finalize(0, count);
    codec.Deliver(0, count);
    return Status::OK();
  }
  if (!codec.OneShot())
    return Status::Internal(ch.name() + ": this mode's codec has no one-shot all-reduce");
  const std::vector<size_t> bounds = OneShotSegments(codec, count, segment_bytes);
  const size_t segments = bounds.size() - 1;
  // Where each segment's image starts in a rank's scratch (images pack per segment).
  std::vector<size_t> at(segments + 1, 0);
  for (size_t s = 0; s < segments; ++s)
    at[s + 1] = at[s] + codec.WireBytes(bounds[s + 1] - bounds[s], 1);
  ScratchAllocator* alloc = codec.scratch_allocator();
  std::vector<ScratchBuffer> images;  // per rank: ours is the copy we send
  std::vector<std::vector<Channel::Handle>> recv(n, std::vector<Channel::Handle>(segments, 0));
  for (int p = 0; p < n; ++p) {
    images.emplace_back(alloc);
    SIEVE_RETURN_IF_ERROR(images.back().Reserve(at[segments]));
  }
  auto image = [&](int p, size_t s) { return static_cast<char*>(images[p].data()) + at[s]; };
  // Every receive first, in segment order, so none waits to be buffered on its way.
  for (size_t s = 0; s < segments; ++s)
    for (int p = 0; p < n; ++p)
      if (p != rank)
        SIEVE_RETURN_IF_ERROR(ch.Recv(p, image(p, s), at[s + 1] - at[s], &recv[p][s]));
  for (size_t s = 0; s < segments; ++s) {
    const size_t b = bounds[s], len = bounds[s + 1] - b;
    if (len != 0) codec.CopyInputWire(b, len, image(rank, s));
    for (int step = 1; step < n; ++step) {  // the nearest peers first, like the scales
      const int p = (rank + step) % n;
      SIEVE_RETURN_IF_ERROR(ch.Send(p, image(rank, s), at[s + 1] - at[s]));
    }
  }
  // Once every message is in and out, what is left (adding, delivering) cannot
  // fail on the host: the verdict goes then and travels while that work is done.
  const bool may_vouch = !codec.MayFailLocally();
  bool vouched = false;
  // Codecs that decode every image of a segment in one pass get them all at once.
  const bool fused = codec.DecodesWires();
  std::vector<const void*> wires(n);
  for (size_t s = 0; s < segments; ++s) {
    const size_t b = bounds[s], len = bounds[s + 1] - b;
    if (s + 1 == segments) SIEVE_RETURN_IF_ERROR(ch.WaitAll());
    if (may_vouch && !vouched && codec.status().ok()) vouched = ch.Vouch();
    for (int p = 0; p < n; ++p) {
      if (p != rank) SIEVE_RETURN_IF_ERROR(ch.Wait(recv[p][s]));
      wires[p] = image(p, s);
      if (len == 0 || fused) continue;
      if (p == 0)
        codec.LoadWire(b, len, image(p, s));
      else
        codec.ReduceInto(b, len, 1, image(p, s), /*first=*/false);
    }
    if (fused) {
      codec.DecodeWires(b, len, wires.data(), n);
      continue;
    }
    codec.Finalize(b, len);
    codec.Deliver(b, len);
  }
  return ch.WaitAll();
}

}  // namespace sieve::algo
