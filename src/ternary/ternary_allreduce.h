// The ternary all-reduce as a plan (DESIGN.md 1.3): agree on block scales (the
// max over ranks, pipelined with the ring: ternary_scales.h), run the ring or
// tree with the TernaryCodec, which dequantizes each range into recvbuff on
// its last hop. Under a mask the same
// runs over the kept elements only, gathered and scattered by the kernels.
// Arguments are already checked by api/.
#ifndef SIEVE_COLL_TERNARY_ALLREDUCE_H_
#define SIEVE_COLL_TERNARY_ALLREDUCE_H_

#include <cstdint>
#include <memory>

#include "coll/collectives.h"
#include "kernels/ternary.h"

namespace sieve::algo {
class LocalAbsMax;  // ternary/ternary_scales.h
}  // namespace sieve::algo

namespace sieve::coll {

struct TernaryArgs {
  CollArgs base;  // dtype float32/float16/bfloat16, op sum or avg
  uint64_t seed = 0;
  uint64_t step = 0;
  size_t block = 2048;  // >= 1
  // Levels per sign L (DESIGN.md 1.3a; 1..kernels::kMaxLevels): codes in [-L, L],
  // result s_b * Q / L (sum) or s_b * Q / (nL) (avg). 1 is the ternary all-reduce.
  int levels = 1;
  // Error feedback: this rank's residual, one float per element (nullptr: off).
  // Added to the input before quantizing and updated with what was dropped.
  float* residual = nullptr;
  // Philox rank key (-1: comm.rank()) and avg divisor (0: comm.size()): the
  // hierarchical all-reduce quantizes each host's slice as its owner's rank
  // and averages over every rank, not over the hosts.
  int rng_rank = -1;
  int divisor = 0;
  // A mask (nnz > 0 kept indices of base.count, and its bitmap): quantize only
  // the kept elements (Philox index and scale block = position among them),
  // write zeros elsewhere. Residuals are then per kept element. Null: dense.
  const uint32_t* mask_idx = nullptr;
  const uint64_t* mask_bits = nullptr;
  size_t mask_nnz = 0;
  // The mask's identity (mask::MaskState::digest) wherever the call has one, also
  // when the caller packed the kept elements already (mask_idx null): mixed into
  // the fingerprint. 0: unmasked.
  uint64_t mask_digest = 0;
  // With a mask, on the host: base.send already holds the nnz kept elements,
  // gathered once by mask::TernaryAllReduceMasked; quantized from there rather
  // than through the mask (the same elements in the same order).
  bool mask_send_packed = false;
  // This rank's block abs-maxes of what it quantizes (ceil(elements / block)),
  // made by the caller (the masked call, fused with its gather, which then goes on
  // only as far as each scale piece needs: base.send holds the elements Through
  // has made); null: the flat call computes them. The hierarchical plan ignores them.
  algo::LocalAbsMax* local_scales = nullptr;
};

// What this rank quantizes: sendbuff (gathered through the mask, if any), plus
// its residual with error feedback, keyed by (seed, rng_rank or comm.rank(),
// step); the caller sets the scales once agreed. Shared with the quantized
// reduce-scatter (ternary/quantized_reduce_scatter.h).
kernels::TernarySource TernarySourceOf(Comm& comm, const TernaryArgs& args);

// Wire bytes of one pipelining segment: as many elements as a dense segment of
// the same input (SIEVE_SEGMENT_BYTES / element size) would hold, not
// SIEVE_SEGMENT_BYTES of the ~10x smaller wire. Otherwise a 16 MiB call is one
// segment per chunk and each ring step quantizes, adds or dequantizes a whole
// chunk while the link idles; this way the per-segment CPU work matches the
// dense ring's and overlaps the network. The same on every rank (it depends
// on the config, datatype and size only), so message sizes agree.
size_t SegmentWireBytes(const Comm& comm, const algo::Codec& codec, kernels::DType dtype);

// The plan plan::ChooseTernaryAllReduce picks: hierarchical without error
// feedback and without a mask (masked + ternary packs first for that plan): the
// host sums (exact up to the datatype's rounding) are quantized, once, for the
// inter-host step only. Else the flat ring or tree.
Status TernaryAllReduce(Comm& comm, const TernaryArgs& args);

// The device path (ternary/device_ternary.h) runs TernaryAllReduce's flat plan
// in two steps around its own kernels, with the same network operations in
// the same order, so it interoperates with host ranks:
// What every rank agrees on for the ternary call `args` (both of its steps):
// kind, count (of elements quantized: under a mask the kept ones), datatype,
// op and the mode word of seed, step, block_size and levels (algo::TernaryMode), so a
// mismatch names the user's field.
algo::OpFingerprint TernaryFingerprint(const TernaryArgs& args);
// One flat call's channel (one fingerprint and one verdict exchange for the
// whole call) and scale agreement (ternary/ternary_scales.h), from step 1 to step 2.
struct TernaryCall;
// Step 1: opens the call and agrees on every scale: this rank's block
// abs-maxes (nblocks floats) become the agreed scales, in place. *call is
// what step 2 runs on (null on one rank). A failure here ends the call.
Status TernaryAgreeScales(Comm& comm, const TernaryArgs& args, float* scales, size_t nblocks,
                          std::shared_ptr<TernaryCall>* call);
// Step 2: the ring/tree from this rank's codes, already quantized into the
// wire (TernaryBits(levels) bits) with (seed, comm.rank(), step) against `scales`.
// Writes the final integer sums Q packed in TernaryBits(comm.size() * levels) bits
// into `sums_wire` (dequantized by the caller: s_b * Q / L, / nL for avg), or, when
// that is null, the result as TernaryAllReduce's into args.base.recv.
Status TernaryAllReduceQuantized(Comm& comm, const TernaryArgs& args, TernaryCall* call,
                                 const float* scales, const void* wire, void* sums_wire);

}  // namespace sieve::coll

#endif  // SIEVE_COLL_TERNARY_ALLREDUCE_H_
