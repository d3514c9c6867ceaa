// The quantized all-gather (sieveAllGatherQuantized, issue 20): each rank
// encodes its shard once as block-scaled int8 or int4 (kernels/block_quant.h),
// the dense ring all-gather moves the encoded shards as bytes, and every rank
// (the owner too) decodes every shard, so all ranks hold the same values.
// On device buffers the kernels encode and decode on the stream and only the
// encoded shards are staged. Arguments are already checked by api/.
#ifndef SIEVE_TERNARY_QUANTIZED_ALLGATHER_H_
#define SIEVE_TERNARY_QUANTIZED_ALLGATHER_H_

#include "coll/call.h"
#include "kernels/dtype.h"

namespace sieve::ternary {

struct QuantizedGatherParams : coll::ModeParams {
  int bits = 8;  // 8 or 4
};

// args.count: elements per rank (sendcount); recv holds count * comm.size().
Status QuantizedAllGather(Comm& comm, const coll::CollArgs& args, int bits);

// The exchange alone (comm.size() > 1): `image` holds comm.size() encoded shards
// of `count` elements (BlockQuantBytes each), this rank's encoded already; the
// ring fills in the others'. A device rank's host step (device_quantized_allgather.h).
Status QuantizedAllGatherImage(Comm& comm, size_t count, kernels::DType dtype, int bits,
                               void* image);

// For core/collectives.def's QuantizedAllGather (dispatch/modes.cc).
const coll::Mode& QuantizedAllGatherMode();

}  // namespace sieve::ternary

#endif  // SIEVE_TERNARY_QUANTIZED_ALLGATHER_H_
