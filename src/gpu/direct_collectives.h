// The direct path of the plain dense collectives on device buffers (UCX with
// CUDA memory support, gpu/direct_path.h): nothing is staged. An operation is
// one handshake on the caller's stream (the progress engine's: the stream
// signals that the earlier work is done, then waits until the progress thread
// signals back), and in between the progress thread runs the host path's
// plan with device pointers handed to UCX, in the caller's CUDA context
// (coll::DenseMemory on the device): combining by gpu/device_dense_codec.h
// (device kernels on the engine's own stream), work buffers and scratch from
// gpu/device_scratch.h, copies on the device. All-reduce (flat ring/tree),
// broadcast, reduce (chains), all-gather and reduce-scatter (rings). Same
// plans as the host path, so the results are the same bits and device and
// host ranks interoperate. The hierarchical all-reduce and the compressed
// modes stay staged.
#ifndef SIEVE_GPU_DIRECT_COLLECTIVES_H_
#define SIEVE_GPU_DIRECT_COLLECTIVES_H_

#include "gpu/device_collectives.h"

namespace sieve::gpu {

// Enqueues the collective (not kAllReduceWhole; an all-reduce whose plan is flat:
// plan::ChooseDenseOnDevice) over the device buffers of `args` on `stream` and returns.
Status EnqueueDirect(Comm& comm, CollKind kind, const coll::CollArgs& args, cu::Stream stream);

}  // namespace sieve::gpu

#endif  // SIEVE_GPU_DIRECT_COLLECTIVES_H_
