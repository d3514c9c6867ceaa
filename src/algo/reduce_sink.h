// ReduceSink: combines a wire image into work as its pieces arrive, for a
// receive the transport streams (transport::ByteSink), so the image is never
// copied whole into a buffer of ours first. Only for codecs whose image is an
// array of fixed-size elements that combine one by one
// (Codec::PieceElementBytes); a piece may end inside an element, sit at any
// address (the codec reads it where it lies) and come in any order, as UCX's
// fragments do.
#ifndef SIEVE_ALGO_REDUCE_SINK_H_
#define SIEVE_ALGO_REDUCE_SINK_H_

#include <cstddef>
#include <vector>

#include "algo/codec.h"
#include "transport/transport.h"

namespace sieve::algo {

class ReduceSink final : public transport::ByteSink {
 public:
  // Expects the wire image of [offset, offset + elems) carrying
  // `contributions` ranks, combined by codec->ReduceInto(..., first = true).
  // REQUIRES: codec->PieceElementBytes() is between 1 and 16.
  void Start(Codec* codec, size_t offset, size_t elems, int contributions);
  void Consume(size_t at, const void* data, size_t bytes) override;

 private:
  // Adds bytes [from, from + len) of element `index` (one straddling pieces);
  // combines it once all its bytes are in.
  void AddPart(size_t index, size_t from, const unsigned char* data, size_t len);

  Codec* codec_ = nullptr;
  size_t offset_ = 0, elems_ = 0, elem_bytes_ = 0;
  int contributions_ = 0;
  struct Part {
    size_t index;
    size_t have;  // bytes of it received so far
    alignas(16) unsigned char bytes[16];
  };
  std::vector<Part> parts_;  // elements that straddle pieces, not complete yet
};

}  // namespace sieve::algo

#endif  // SIEVE_ALGO_REDUCE_SINK_H_
