// Dense ternary all-reduce on device buffers, quantized and dequantized on
// the caller's stream: only compressed data crosses to the host and back.
//
//   stream:   block abs-max kernel -> copy count/block maxima to pinned staging ...
//   progress:     agree the scales: the all-reduce-max of the host path  [op 1]
//   stream:   ... scales back -> quantize kernel (this rank's Philox stream,
//             2-bit wire) -> copy the wire (count/4 bytes) to staging ...
//   progress:     the host path's ring/tree from that wire; the final
//                 integer sums packed in TernaryBits(n) bits            [op 2]
//   stream:   ... copy the sums' wire back -> dequantize kernel (s_b * Q,
//             / n for avg) into recvbuff -> free scratch
//
// The two progress operations are the host path's two network operations in
// the same order (same fingerprints), so device and host ranks interoperate
// and results equal the host path bit for bit. Error feedback, masks and the
// hierarchical plan stay on the whole-buffer path (coll::TernaryIsFlatDense).
#ifndef SIEVE_GPU_DEVICE_TERNARY_H_
#define SIEVE_GPU_DEVICE_TERNARY_H_

#include "coll/ternary_allreduce.h"

struct CUstream_st;

namespace sieve::gpu {

// Enqueues the dense ternary all-reduce of the device buffers of `args`
// (coll::TernaryIsFlatDense holds; kernels available: CanPackOnDevice()) on
// `stream` and returns.
Status EnqueueDeviceTernary(Comm& comm, const coll::TernaryArgs& args, CUstream_st* stream);

}  // namespace sieve::gpu

#endif  // SIEVE_GPU_DEVICE_TERNARY_H_
