// The quantized reduce-scatter of device buffers (sieveReduceScatterQuantized):
// the ternary all-reduce's device pipeline (device_ternary.h) over the whole
// sendbuff — error feedback, block abs-max and quantize kernels on the caller's
// stream — the host path's scale pieces and ring from the staged codes
// (quantized_reduce_scatter.h), and only this rank's chunk's final sums staged
// back and dequantized on the stream. So the scales, the codes (TernaryBits(L)
// bits an element) and one chunk's sums cross to the host, not the whole
// sendbuff, and device and host ranks interoperate bit for bit.
//
// The chunk [r * count, (r + 1) * count) rarely starts on a block boundary:
// the sums come back from the block's first element (the leading ones as
// zeros), are dequantized into scratch and the chunk is copied to recvbuff.
#ifndef SIEVE_TERNARY_DEVICE_REDUCE_SCATTER_H_
#define SIEVE_TERNARY_DEVICE_REDUCE_SCATTER_H_

#include "ternary/device_residuals.h"
#include "ternary/ternary_allreduce.h"

struct CUstream_st;

namespace sieve::gpu {

// args.base: the caller's device buffers, count elements per rank (sendbuff holds
// count * comm.size()); unmasked, no host residual; `residual`: error feedback
// over the whole sendbuff, or null. REQUIRES comm.size() > 1, count > 0, and
// device kernels (CanPackOnDevice()).
Status EnqueueDeviceQuantizedReduceScatter(Comm& comm, const coll::TernaryArgs& args,
                                           DeviceResidual* residual, CUstream_st* stream);

}  // namespace sieve::gpu

#endif  // SIEVE_TERNARY_DEVICE_REDUCE_SCATTER_H_
