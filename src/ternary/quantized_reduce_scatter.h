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

#include "ternary/ternary_allreduce.h"

namespace sieve::coll {

// args.base.count: elements per rank (recvcount); args.base.send holds
// count * comm.size() of them. A mask (args.mask_idx etc.) covers all of
// sendbuff: only its kept elements are quantized (Philox index and scale block
// = position among them) and recvbuff is 0 where it drops. args.residual, when
// set, holds one float per quantized element.
Status QuantizedReduceScatter(Comm& comm, const TernaryArgs& args);

}  // namespace sieve::coll

#endif  // SIEVE_TERNARY_QUANTIZED_REDUCE_SCATTER_H_
