// Masked + ternary all-reduce on device buffers, entirely on the caller's
// stream: the mask's pack kernel gathers the kept elements into device
// scratch, the device ternary run (device_ternary.h) quantizes that packed
// vector and stages only scales and wire, and its dequantize kernel scatters
// the final sums to the kept positions of recvbuff, zero-filling the rest.
// Scales, Philox indices, residuals and the network operations are over
// packed positions, as in the host path (mask::TernaryAllReduceMasked), so
// results are the same bits and device and host ranks interoperate.
#ifndef SIEVE_GPU_DEVICE_MASKED_TERNARY_H_
#define SIEVE_GPU_DEVICE_MASKED_TERNARY_H_

#include <memory>

#include "ternary/ternary_allreduce.h"
#include "ternary/device_residuals.h"
#include "mask/mask_registry.h"

struct CUstream_st;

namespace sieve::gpu {

// args.base: the caller's device buffers (count == mask->count); mask->idx
// non-empty; plan::ChooseTernaryAllReduce(nnz) is flat; residual: nnz elements, or null.
Status EnqueueDeviceMaskedTernary(Comm& comm, const coll::TernaryArgs& args,
                                  std::shared_ptr<mask::MaskState> mask, DeviceResidual* residual,
                                  CUstream_st* stream);

}  // namespace sieve::gpu

#endif  // SIEVE_GPU_DEVICE_MASKED_TERNARY_H_
