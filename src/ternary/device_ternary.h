// Ternary all-reduce of a device vector, quantized and dequantized on the
// caller's stream: only compressed data crosses to the host and back.
//
//  [stream:  error feedback: sent = g + e_prev (kernel), kept in scratch]
//   stream:   block abs-max kernel -> copy count/block maxima to pinned staging ...
//   progress:     open the call (its channel) and agree on every scale: the
//                 host path's pieces of maxima, all of them     [op 1]
//   stream:   ... scales back -> quantize kernel (this rank's Philox stream,
//             L levels (1: ternary), TernaryBits(L)-bit wire; with error feedback
//             e = sent - s_b * q / L in the same pass) -> copy the wire to staging ...
//   progress:     the host path's ring/tree from that wire; the final
//                 integer sums packed in TernaryBits(nL) bits           [op 2]
//   stream:   ... copy the sums' wire back -> dequantize kernel (s_b * Q / L,
//             / nL for avg) into the output (under a mask: scattered to the
//             kept positions, the others zero-filled) -> free scratch
//
// The two progress operations send the host path's messages in the same order
// on one channel (one fingerprint: op 1 opens it, op 2 concludes it; the host
// path pipelines the scales with its ring, but all of its scale messages also
// precede its ring messages), so device and host ranks interoperate
// and results (and residuals) equal the host path bit for bit. The vector is
// a dense buffer, or a mask's packed kept elements (device_masked_ternary.h).
// Only the hierarchical plan stays off it (plan::ChooseTernaryAllReduce).
// The quantized reduce-scatter runs the same stream steps with its own host
// half (QuantizedHostHalf; ternary/device_reduce_scatter.h).
#ifndef SIEVE_GPU_DEVICE_TERNARY_H_
#define SIEVE_GPU_DEVICE_TERNARY_H_

#include <memory>

#include "ternary/ternary_allreduce.h"
#include "ternary/device_residuals.h"

struct CUstream_st;

namespace sieve::gpu {

// The host half of a quantized collective on device buffers: the two
// operations the progress thread runs between the stream's kernels, in order.
class QuantizedHostHalf {
 public:
  virtual ~QuantizedHostHalf() = default;
  // Op 1: opens the call and agrees on every scale: this rank's nblocks block
  // abs-maxes in `scales` become the agreed scales, in place.
  virtual Status AgreeScales(float* scales, size_t nblocks) = 0;
  // Op 2: the exchange from this rank's codes `wire` (TernaryBits(L) bits an
  // element, against the agreed `scales`): the final sums of the run's output
  // elements (DeviceTernaryRun::out_*) packed in TernaryBits(nL) bits into `sums`.
  virtual Status Exchange(const float* scales, const void* wire, void* sums) = 0;
};

// One ternary all-reduce of device memory, or (with `host`) another quantized
// collective that quantizes a device vector and dequantizes some of its sums.
struct DeviceTernaryRun {
  // base.send: the vector quantized, base.recv: where s_b * Q goes (may be
  // the same), base.count: its elements; plan::ChooseTernaryAllReduce is flat.
  // args.residual and the mask fields are unused (must be null).
  coll::TernaryArgs args;
  // A mask's packed vector (device copies of its kept positions and bitmap):
  // base.recv is then the caller's buffer of `count` elements, s_b * Q of
  // kept element k goes to base.recv[idx[k]], and the rest is zero-filled.
  struct Scatter {
    const uint32_t* idx = nullptr;  // null: no scatter
    const uint64_t* bits = nullptr;
    size_t count = 0;
  } scatter;
  DeviceResidual* residual = nullptr;  // error feedback (count elements), or null
  // The host half; null: the ternary all-reduce's (coll::TernaryAgreeScales,
  // coll::TernaryAllReduceQuantized), whose output is every element.
  std::shared_ptr<QuantizedHostHalf> host;
  // With `host`: the sums that come back are of the out_count elements from
  // out_first (a multiple of args.block) of base.send's vector; the first
  // out_skip of them are dropped and the rest dequantized into base.recv.
  size_t out_first = 0, out_count = 0, out_skip = 0;
  const char* name = "ternary allreduce";  // in messages and the INFO line
  const char* scales_name = "ternary allreduce (scales)";  // op 1's, in messages
  size_t dense_bytes = 0;  // the caller's buffer, for the INFO line
  bool masked = false;     // counted as a masked collective, as the host path does
};

// Enqueues `run` on `stream` (kernels available: CanPackOnDevice()) and returns.
Status EnqueueDeviceTernaryRun(Comm& comm, const DeviceTernaryRun& run, CUstream_st* stream);

// The dense ternary all-reduce of the device buffers of `args`.
Status EnqueueDeviceTernary(Comm& comm, const coll::TernaryArgs& args, DeviceResidual* residual,
                            CUstream_st* stream);

}  // namespace sieve::gpu

#endif  // SIEVE_GPU_DEVICE_TERNARY_H_
