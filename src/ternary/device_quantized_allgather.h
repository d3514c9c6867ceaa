// The quantized all-gather of device buffers (sieveAllGatherQuantized): an
// encode kernel writes this rank's shard into its place in a device image of
// every shard, only that encoded shard is staged to the host, the progress
// thread runs the host path's ring all-gather of the image, the whole image
// (n encoded shards) comes back, and a decode kernel per shard writes recvbuff.
// So BlockQuantBytes(count, bits) bytes cross to the host and n of them back,
// not count and n * count elements, and the bytes equal the host path's.
#ifndef SIEVE_TERNARY_DEVICE_QUANTIZED_ALLGATHER_H_
#define SIEVE_TERNARY_DEVICE_QUANTIZED_ALLGATHER_H_

#include "coll/collectives.h"

struct CUstream_st;

namespace sieve::gpu {

// args: the caller's device buffers, args.count elements per rank; bits 8 or 4.
// REQUIRES device kernels (CanPackOnDevice()) and args.count > 0.
Status EnqueueDeviceQuantizedAllGather(Comm& comm, const coll::CollArgs& args, int bits,
                                       CUstream_st* stream);

}  // namespace sieve::gpu

#endif  // SIEVE_TERNARY_DEVICE_QUANTIZED_ALLGATHER_H_
