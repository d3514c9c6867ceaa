// The agreement on a ternary call's block scales (s_b = the max over ranks of
// each rank's max |g| in block b), pipelined with the ring that uses them.
//
// The blocks are cut into pieces in the order the ring first quantizes them:
// piece s holds the blocks that segment s of some chunk is the first to reach.
// Every rank computes its abs-maxes piece by piece and sends each piece to
// every peer as soon as it is computed: one round, no forwarding, on the
// call's own channel, all of it before any ring message (so a device rank,
// which agrees on every scale before its quantize kernel runs, sends the same
// messages in the same order). The codec then waits for a piece only when it
// first quantizes a range of it, so the ring's first segments go out as soon
// as piece 0 has arrived from every rank, while the last pieces are still on
// the way; before, the ring waited for a separate all-reduce-max of every
// scale (its own fingerprint and verdict exchange, 2 log n hops, each behind
// the slowest rank's whole abs-max pass). The max is exact and does not
// depend on the order of its operands, so the scales are the same bits.
#ifndef SIEVE_TERNARY_TERNARY_SCALES_H_
#define SIEVE_TERNARY_TERNARY_SCALES_H_

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "algo/channel.h"
#include "ternary/ternary_codec.h"

namespace sieve::algo {

// Which blocks form which piece (the same on every rank: it depends on the
// element count, the block, the ring's chunks and its segment count only).
struct ScalePieces {
  size_t elems = 0;
  size_t block = 1;
  size_t nblocks = 0;
  std::vector<uint32_t> piece_of;  // per block
  // Per piece: its blocks as ascending ranges [first, last).
  std::vector<std::vector<std::pair<size_t, size_t>>> runs;
  std::vector<size_t> count;  // per piece: its blocks
};

// The pieces of `elems` elements in blocks of `block`, for a ring over the
// chunks [bounds[c], bounds[c+1]) cut into `segments` segments each (the tree:
// bounds {0, elems}, one segment).
ScalePieces CutScalePieces(size_t elems, size_t block, const std::vector<size_t>& bounds,
                           size_t segments);

// This rank's block abs-maxes, made by the caller as far as a piece needs them (the
// masked call gathers its kept elements that far), so that the first pieces go out
// while the rest is still being made.
class LocalAbsMax {
 public:
  virtual ~LocalAbsMax() = default;
  // Returns every block's abs-max (nblocks floats) once those of the blocks of
  // elements [0, end) are final, and those elements ready to quantize.
  virtual const float* Through(size_t end) = 0;
};

class TernaryScales : public ScaleSource {
 public:
  // `scales`: nblocks floats; this rank's abs-maxes go there and are replaced
  // by the agreed scales piece by piece. REQUIRES: ch.size() > 1.
  TernaryScales(Channel& ch, ScalePieces pieces, float* scales);
  TernaryScales(const TernaryScales&) = delete;
  TernaryScales& operator=(const TernaryScales&) = delete;

  // Adds `proposal` (a float every rank sends, e.g. a rate it measured) to this
  // rank's first piece; proposals() then holds every rank's, by rank, once the
  // first piece is agreed. Before Start; every rank of the call must call it.
  void CarryProposal(float proposal);
  const std::vector<float>& proposals() const { return proposals_; }
  // Seconds this rank has waited so far for peers' pieces.
  double waited_s() const { return waited_s_; }

  // Posts every piece's receives, then computes this rank's abs-maxes of
  // `src` piece by piece, sending each piece as it is done.
  Status Start(const kernels::TernarySource& src);
  // The same when the abs-maxes are in `scales` already (a device rank's).
  Status StartComputed();
  // The same with the caller's abs-maxes, asked for piece by piece; every element
  // has been made (local.Through(elems)) when it returns.
  Status StartComputed(LocalAbsMax& local);
  // ScaleSource: waits for the pieces of the blocks of [offset, offset+elems).
  void Ensure(size_t offset, size_t elems) override;
  Status status() const override { return status_; }
  // Waits for every piece (and for this rank's scale sends to complete).
  Status Finish();

 private:
  // This rank's abs-maxes from `src`, from `local`, or in scales_ already (both null).
  Status Post(const kernels::TernarySource* src, LocalAbsMax* local);
  // Waits for piece p from every peer and folds it into the scales.
  Status Agree(size_t p);

  Channel& ch_;
  ScalePieces pieces_;
  float* scales_;
  std::vector<std::vector<float>> sent_;                // per piece: what went out
  std::vector<std::vector<std::vector<float>>> recvd_;  // per piece, per peer
  std::vector<std::vector<Channel::Handle>> recv_handles_, send_handles_;
  size_t agreed_ = 0;  // pieces 0 .. agreed_-1 hold the agreed scales
  Status status_;
  bool carry_proposal_ = false;
  float proposal_ = 0;
  std::vector<float> proposals_;  // by rank, once piece 0 is agreed
  double waited_s_ = 0;
};

}  // namespace sieve::algo

#endif  // SIEVE_TERNARY_TERNARY_SCALES_H_
