// The quantized reduce-scatter (sieveReduceScatterQuantized, issue 20): the
// ternary all-reduce's codec, scale agreement and Philox stream run over the
// ring's reduce-scatter half only. Every rank quantizes its whole input
// (count * n elements) at L levels against the block scales agreed over all
// of it, the ring carries exact integer partial sums (k ranks in
// TernaryBits(kL) bits), and rank r dequantizes the sums of its chunk
// [r * count, (r + 1) * count) into recvbuff. Chunk r of the result is
// therefore chunk r of the quantized all-reduce of the same inputs, bit for bit.
// Arguments are already checked by api/.
#ifndef SIEVE_TERNARY_QUANTIZED_REDUCE_SCATTER_H_
#define SIEVE_TERNARY_QUANTIZED_REDUCE_SCATTER_H_

#include <memory>

#include "ternary/ternary_allreduce.h"

namespace sieve::coll {

// args.base.count: elements per rank (recvcount); args.base.send holds
// count * comm.size() of them. A mask (args.mask_idx etc.) covers all of
// sendbuff: only its kept elements are quantized (Philox index and scale block
// = position among them) and recvbuff is 0 where it drops. args.residual, when
// set, holds one float per quantized element.
Status QuantizedReduceScatter(Comm& comm, const TernaryArgs& args);

// The two host steps of a device rank's call (ternary/device_ternary.h), which
// quantizes on its stream and sends the host path's messages in the same order.
// Unmasked, no host residual (the device keeps it); REQUIRES comm.size() > 1.
struct QuantizedReduceScatterCall;
// Step 1: opens the call and agrees on every scale: this rank's block abs-maxes
// of its whole sendbuff (nblocks floats) become the agreed scales, in place.
Status QuantizedReduceScatterAgreeScales(Comm& comm, const TernaryArgs& args, float* scales,
                                         size_t nblocks,
                                         std::shared_ptr<QuantizedReduceScatterCall>* call);
// Step 2: the ring from this rank's codes `wire` (its whole sendbuff in
// TernaryBits(L) bits); writes the final sums of this rank's chunk, preceded by
// `lead` zeros (so that the packed range starts on a block boundary), in
// TernaryBits(n * L) bits into `sums_wire`, and concludes the call.
Status QuantizedReduceScatterFromCodes(Comm& comm, QuantizedReduceScatterCall* call,
                                       const float* scales, const void* wire, size_t lead,
                                       void* sums_wire);

}  // namespace sieve::coll

#endif  // SIEVE_TERNARY_QUANTIZED_REDUCE_SCATTER_H_
