// How a ternary all-reduce call runs: on host buffers through the host plans
// (masked_ternary.h, ternary_allreduce.h), on device buffers by the route
// plan::ChooseTernaryOnDevice picks. Error-feedback residuals are named by the
// caller's buffer, whichever route a call takes.
#include "ternary/ternary_mode.h"

#include "gpu/device_collectives.h"
#include "mask/device_masked.h"
#include "mask/masked_allreduce.h"
#include "plan/compression_choice.h"
#include "plan/device_choice.h"
#include "ternary/auto_levels.h"
#include "ternary/device_masked_ternary.h"
#include "ternary/device_reduce_scatter.h"
#include "ternary/device_residuals.h"
#include "ternary/device_ternary.h"
#include "ternary/masked_ternary.h"
#include "ternary/quantized_reduce_scatter.h"
#include "ternary/residuals.h"
#include "ternary/ternary_allreduce.h"

namespace sieve::ternary {

namespace {

using coll::Call;

// The elements quantized (under a mask, the kept ones): a residual's length.
size_t QuantizedElements(const Call& call) {
  const TernaryParams& p = call.Params<TernaryParams>();
  return p.mask ? p.mask->idx.size() : call.args.count;
}

// The call's ternary arguments over `buffers` (the caller's, or staging).
coll::TernaryArgs ArgsOver(const Call& call, const coll::CollArgs& buffers) {
  const TernaryParams& p = call.Params<TernaryParams>();
  coll::TernaryArgs args;
  args.base = buffers;
  args.seed = p.seed;
  args.step = p.step;
  args.block = p.block;
  args.levels = p.levels;
  if (p.mask) args.mask_digest = p.mask->digest;
  return args;
}

// The host plans on host memory `buffers` at `levels`; the residual is the caller's buffer's.
Status RunAt(Comm& comm, const Call& call, const coll::CollArgs& buffers, int levels) {
  const TernaryParams& p = call.Params<TernaryParams>();
  coll::TernaryArgs args = ArgsOver(call, buffers);
  args.levels = levels;
  if (p.error_feedback)
    args.residual =
        HostResidualFor(comm, call.args.send, call.args.count, static_cast<int>(call.args.dtype),
                        p.mask_handle, QuantizedElements(call));
  return p.mask ? mask::TernaryAllReduceMasked(comm, args, *p.mask)
                : coll::TernaryAllReduce(comm, args);
}

// At the call's levels, or at those auto chooses: dense (masked under a mask; a
// residual waits, unchanged, for the next quantized call) or L levels.
Status RunOver(Comm& comm, const Call& call, const coll::CollArgs& buffers) {
  const TernaryParams& p = call.Params<TernaryParams>();
  if (p.levels != kLevelsAuto) return RunAt(comm, call, buffers, p.levels);
  return RunWithAutoLevels(comm, QuantizedElements(call), buffers.dtype, p.block,
                           [&](int levels) {
                             if (levels != plan::kAutoDense)
                               return RunAt(comm, call, buffers, levels);
                             return p.mask ? mask::AllReduceMasked(comm, buffers, *p.mask)
                                           : coll::AllReduce(comm, buffers);
                           });
}

Status RunOnHost(Comm& comm, const Call& call) { return RunOver(comm, call, call.args); }

Status EnqueueOnDevice(Comm& comm, const Call& call) {
  using plan::DeviceRoute;
  const TernaryParams& p = call.Params<TernaryParams>();
  const size_t elems = QuantizedElements(call);
  Comm* c = &comm;
  // Auto chooses per call from agreed inputs on the host: the whole buffer staged.
  if (p.levels == kLevelsAuto)
    return gpu::EnqueueDeviceCollective(
        comm, gpu::CollKind::kAllReduceWhole, call.args, call.stream,
        [c, call](const coll::CollArgs& staged) { return RunOver(*c, call, staged); });
  const DeviceRoute route = plan::ChooseTernaryOnDevice(comm, elems, p.error_feedback,
                                                        p.mask != nullptr,
                                                        gpu::CanPackOnDevice(), p.levels)
                                .route;
  // The flat plan (always with error feedback): every kernel on the stream,
  // packed first under a mask; only scales, wire and final sums are staged
  // (ternary/device_ternary.h, ternary/device_masked_ternary.h).
  if (route == DeviceRoute::kKernels) {
    const coll::TernaryArgs args = ArgsOver(call, call.args);
    gpu::DeviceResidual* residual = nullptr;
    if (p.error_feedback)
      SIEVE_RETURN_IF_ERROR(gpu::DeviceResidualFor(comm, call.args.send, call.args.count,
                                                   static_cast<int>(call.args.dtype),
                                                   p.mask_handle, elems, call.stream, &residual));
    return p.mask ? gpu::EnqueueDeviceMaskedTernary(comm, args, p.mask, residual, call.stream)
                  : gpu::EnqueueDeviceTernary(comm, args, residual, call.stream);
  }
  // Masked, hierarchical (no error feedback): packed on the device, the nnz
  // kept elements staged and run through the hierarchical plan on the host.
  if (route == DeviceRoute::kPackedOnDevice)
    return gpu::EnqueueDevicePacked(
        comm, "masked ternary allreduce (hierarchical plan, quantized on the host)", call.args,
        p.mask, call.stream, [c, call](const coll::CollArgs& packed) {
          const TernaryParams& q = call.Params<TernaryParams>();
          return mask::TernaryAllReduceMaskedPacked(*c, ArgsOver(call, packed), *q.mask);
        });
  // Else the whole buffer is staged and quantized on the host.
  return gpu::EnqueueDeviceCollective(
      comm, gpu::CollKind::kAllReduceWhole, call.args, call.stream,
      [c, call](const coll::CollArgs& staged) { return RunOver(*c, call, staged); });
}

const coll::Mode kTernary = {&RunOnHost, &EnqueueOnDevice, nullptr};

// The reduce-scatter on host memory `buffers` (sendbuff: count * nranks elements,
// which the mask, if any, covers).
Status RunReduceScatterOver(Comm& comm, const Call& call, const coll::CollArgs& buffers) {
  const TernaryParams& p = call.Params<TernaryParams>();
  coll::TernaryArgs args = ArgsOver(call, buffers);
  const size_t total = call.args.count * static_cast<size_t>(comm.size());
  if (p.mask) {
    ++comm.stats().masked_collectives;
    args.mask_idx = p.mask->idx.data();
    args.mask_bits = p.mask->bits.data();
    args.mask_nnz = p.mask->idx.size();
  }
  if (p.error_feedback)
    args.residual = HostResidualFor(comm, call.args.send, total, static_cast<int>(call.args.dtype),
                                    p.mask_handle, p.mask ? p.mask->idx.size() : total);
  return coll::QuantizedReduceScatter(comm, args);
}

Status RunReduceScatterOnHost(Comm& comm, const Call& call) {
  return RunReduceScatterOver(comm, call, call.args);
}

// Device buffers: quantized by the device kernels, only scales, codes and this
// rank's chunk's sums staged (ternary/device_reduce_scatter.h); else (a mask, no
// kernels) every rank's block staged whole (the blocks' scales and the Philox
// indices span the whole sendbuff) and quantized on the host.
Status EnqueueReduceScatterOnDevice(Comm& comm, const Call& call) {
  const TernaryParams& p = call.Params<TernaryParams>();
  const plan::DeviceRoute route =
      plan::ChooseQuantizedReduceScatterOnDevice(comm, call.args.count, p.mask != nullptr,
                                                 gpu::CanPackOnDevice())
          .route;
  if (route == plan::DeviceRoute::kKernels) {
    const size_t total = call.args.count * static_cast<size_t>(comm.size());
    gpu::DeviceResidual* residual = nullptr;
    if (p.error_feedback)
      SIEVE_RETURN_IF_ERROR(gpu::DeviceResidualFor(comm, call.args.send, total,
                                                   static_cast<int>(call.args.dtype), nullptr,
                                                   total, call.stream, &residual));
    return gpu::EnqueueDeviceQuantizedReduceScatter(comm, ArgsOver(call, call.args), residual,
                                                    call.stream);
  }
  Comm* c = &comm;
  return gpu::EnqueueDeviceCollective(
      comm, gpu::CollKind::kReduceScatterWhole, call.args, call.stream,
      [c, call](const coll::CollArgs& staged) { return RunReduceScatterOver(*c, call, staged); });
}

const coll::Mode kQuantizedReduceScatter = {&RunReduceScatterOnHost,
                                            &EnqueueReduceScatterOnDevice, nullptr};

}  // namespace

const coll::Mode& TernaryMode() { return kTernary; }
const coll::Mode& QuantizedReduceScatterMode() { return kQuantizedReduceScatter; }

}  // namespace sieve::ternary
