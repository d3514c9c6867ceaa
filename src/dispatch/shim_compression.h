// What SIEVE_NCCL_MODE asks of the plain calls the NCCL shim forwards
// (docs/modes.md: the mode table): which of them are quantized, at how many
// levels or bits. Calls not served to NCCL get none of it.
#ifndef SIEVE_DISPATCH_SHIM_COMPRESSION_H_
#define SIEVE_DISPATCH_SHIM_COMPRESSION_H_

#include "coll/collectives.h"

namespace sieve::dispatch {

struct ShimCompression {
  bool auto_mask = false;         // all-reduces through the mask tracker
  bool auto_levels = false;       // float sum/avg all-reduces dense or at L levels per call
  int allreduce_levels = 0;       // float sum/avg all-reduces at L levels; 0: dense
  int reduce_scatter_levels = 0;  // float sum/avg reduce-scatters at L levels; 0: dense
  int allgather_bits = 0;         // float all-gathers block-scaled at 8 or 4 bits; 0: dense
};

ShimCompression CompressionOf(const Comm& comm);

// The shim's reduce-scatter and all-gather as its mode asks (dense otherwise).
Status ShimReduceScatter(Comm& comm, const coll::CollArgs& args);
Status ShimAllGather(Comm& comm, const coll::CollArgs& args);
// Whether that reduce-scatter or all-gather (`kind`) of `args` is quantized: its
// device buffers are then staged whole (scales and Philox indices span the buffer).
bool ShimQuantizes(const Comm& comm, algo::OpKind kind, const coll::CollArgs& args);

// The Philox step of the shim's next quantized call (all-reduce or
// reduce-scatter): the same on every rank, as every rank issues the same calls.
uint64_t ShimNextStep(Comm& comm);

}  // namespace sieve::dispatch

#endif  // SIEVE_DISPATCH_SHIM_COMPRESSION_H_
