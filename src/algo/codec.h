// Codec: how an algorithm encodes, combines and decodes a range of elements.
// The ring and the tree are written once against it; the dense mode is one
// codec, and compressed modes (masked, ternary, subnet) are others.
//
// Vocabulary: `input` is this rank's own data, `work` the buffer the result is
// built in; a "wire image" of a range carries the combination of some number
// of ranks' contributions (1 = this rank's input alone, n = final).
#ifndef SIEVE_ALGO_CODEC_H_
#define SIEVE_ALGO_CODEC_H_

#include <cstddef>

#include "algo/scratch.h"

namespace sieve::algo {

class Codec {
 public:
  virtual ~Codec() = default;

  // Bytes of a wire image of `elems` elements carrying `contributions` ranks.
  virtual size_t WireBytes(size_t elems, int contributions) const = 0;
  // True when Encode writes into `scratch` (the algorithm then keeps the
  // scratch alive until that send completes); false when it returns pointers
  // into input/work (zero copy).
  virtual bool EncodeUsesScratch() const = 0;
  // Whether this particular Encode call writes into `scratch` (so the
  // algorithm need not provide it otherwise); at most EncodeUsesScratch().
  virtual bool EncodeNeedsScratch(size_t offset, size_t elems, int contributions) const {
    return EncodeUsesScratch();
  }
  // A wire image of [offset, offset+elems): of the input when contributions
  // is 1, else of work. Returns the bytes to send.
  virtual const void* Encode(size_t offset, size_t elems, int contributions, void* scratch) = 0;
  // Combines a received wire image into work: work = input (+) wire when
  // `first`, else work = work (+) wire.
  virtual void ReduceInto(size_t offset, size_t elems, int contributions, const void* wire,
                          bool first) = 0;
  // The bytes of one element of a wire image when the image is an array of
  // such elements that ReduceInto combines one by one, so that any whole
  // elements of it may be combined on their own, in any order (the ring then
  // combines a message from the transport's buffer as it arrives: ReduceSink),
  // and ReduceInto then takes `wire` at any address (fragments sit wherever
  // the transport's headers leave them); 0 when ReduceInto needs the whole
  // image (packed or compressed formats).
  virtual size_t PieceElementBytes() const { return 0; }
  // work = input for the range (a rank that receives nothing, e.g. n == 1).
  virtual void LoadInput(size_t offset, size_t elems) = 0;
  // Called exactly once per range when work holds all n contributions, before
  // the range is distributed (e.g. the division of an average).
  virtual void Finalize(size_t offset, size_t elems) = 0;
  // Where a final wire image may be received directly, or nullptr when it must
  // be received into scratch and decoded.
  virtual void* DirectTarget(size_t offset, size_t elems) = 0;
  // work = the decoded final wire image (used when DirectTarget is nullptr).
  virtual void Decode(size_t offset, size_t elems, const void* wire) = 0;
  // Called exactly once per range of an all-reduce, as soon as work holds the
  // range's final value on this rank (after Finalize for the ranges it
  // finalizes, after the receive or Decode otherwise), while the range is still
  // in cache: codecs whose output is not work write it here (the masked codec
  // unpacks into the caller's buffer, the ternary codec dequantizes). Work
  // keeps the range (it may still be forwarded). The input of the range has
  // been read for the last time, so in-place output may overwrite it (codecs
  // that send straight from the input must not: a send may be in flight).
  virtual void Deliver(size_t offset, size_t elems) {}
  // Whether the final wire image of a range (all n contributions) is the same
  // bytes whichever rank encodes it, so that the ring's all-gather may send on
  // the image it received instead of encoding the range from work again.
  virtual bool ForwardsFinalImage() const { return false; }
  // Decode, then Deliver, of a received final image, for a caller that never
  // reads the range's work afterwards (the ring's all-gather of an all-reduce
  // when ForwardsFinalImage): the codec may deliver without writing work.
  virtual void DecodeAndDeliver(size_t offset, size_t elems, const void* wire) {
    Decode(offset, elems, wire);
    Deliver(offset, elems);
  }
  // The one-shot all-reduce (algo/one_shot.h) adds every rank's input on every
  // rank, in rank order, so that every rank computes the same bits: a rank's
  // sum may begin with a peer's contribution, and its own must survive work
  // being written (in place, input is work). Codecs that offer it return true
  // from OneShot() and implement the two calls below; the plan chooses the
  // one-shot only for those.
  virtual bool OneShot() const { return false; }
  // Writes the wire image of the input's range (one contribution,
  // WireBytes(elems, 1) bytes) into `scratch`, a copy that stays valid while
  // work changes.
  virtual void CopyInputWire(size_t offset, size_t elems, void* scratch) {}
  // work = the decoded wire image of one rank's input (the first term of a sum).
  virtual void LoadWire(size_t offset, size_t elems, const void* wire) {}
  // Whether DecodeWires may stand for the one-shot's whole decode of a range
  // (LoadWire of rank 0's image, ReduceInto of every other, Finalize, Deliver):
  // the one-shot then calls it instead, once per range, when every image is in.
  virtual bool DecodesWires() const { return false; }
  // That decode of [offset, offset+elems) from wires[p], rank p's wire image of
  // the range (one contribution), p < n, in one pass over them: the same output
  // as the sequence, which it replaces; work need not hold the range afterwards.
  virtual void DecodeWires(size_t offset, size_t elems, const void* const* wires, int n) {}
  // Where the algorithm's scratch (receive buffers, encoded sends) lives:
  // nullptr for host memory; a device codec returns device memory.
  virtual ScratchAllocator* scratch_allocator() { return nullptr; }
  // A failure the codec met (a device kernel; the calls above return
  // nothing): the caller ends the collective with it, so no peer reports
  // success. Host codecs never fail.
  virtual Status status() const { return Status::OK(); }
  // Whether a call above can still fail once every message has arrived (a
  // device kernel can): the algorithm then leaves the verdict to the end.
  virtual bool MayFailLocally() const { return false; }
};

}  // namespace sieve::algo

#endif  // SIEVE_ALGO_CODEC_H_
