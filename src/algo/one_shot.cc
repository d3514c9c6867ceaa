// One-shot all-reduce (algo/one_shot.h). Our input's image is copied once into
// scratch and sent from there, so work may be written (in place: over the
// input) while the sends are in flight; each peer's image is received into its
// own scratch and added as soon as every lower rank's term is in.
#include "algo/one_shot.h"

#include <vector>

namespace sieve::algo {

Status RunOneShot(Channel& ch, Codec& codec, size_t count) {
  const int n = ch.size(), rank = ch.rank();
  if (n == 1) {
    codec.LoadInput(0, count);
    codec.Finalize(0, count);
    codec.Deliver(0, count);
    return Status::OK();
  }
  if (!codec.OneShot())
    return Status::Internal(ch.name() + ": this mode's codec has no one-shot all-reduce");
  const size_t bytes = codec.WireBytes(count, 1);
  ScratchAllocator* alloc = codec.scratch_allocator();
  std::vector<ScratchBuffer> images;  // per rank: ours is the copy we send
  std::vector<Channel::Handle> recv(n, 0);
  for (int p = 0; p < n; ++p) {
    images.emplace_back(alloc);
    SIEVE_RETURN_IF_ERROR(images.back().Reserve(bytes));
  }
  for (int p = 0; p < n; ++p)
    if (p != rank) SIEVE_RETURN_IF_ERROR(ch.Recv(p, images[p].data(), bytes, &recv[p]));
  if (count != 0) codec.CopyInputWire(0, count, images[rank].data());
  for (int p = 0; p < n; ++p)
    if (p != rank) SIEVE_RETURN_IF_ERROR(ch.Send(p, images[rank].data(), bytes));
  for (int p = 0; p < n; ++p) {
    if (p != rank) SIEVE_RETURN_IF_ERROR(ch.Wait(recv[p]));
    if (count == 0) continue;
    if (p == 0)
      codec.LoadWire(0, count, images[p].data());
    else
      codec.ReduceInto(0, count, 1, images[p].data(), /*first=*/false);
  }
  codec.Finalize(0, count);
  codec.Deliver(0, count);
  return ch.WaitAll();  // the sends read images[rank]
}

}  // namespace sieve::algo
