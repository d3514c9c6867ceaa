// How a plain collective call runs.
#include "dispatch/dense_mode.h"

#include <string>

#include "gpu/device_collectives.h"
#include "gpu/direct_collectives.h"
#include "gpu/direct_path.h"
#include "mask/mask_tracker.h"
#include "plan/device_choice.h"
#include "ternary/masked_ternary.h"
#include "ternary/quantized_allgather.h"
#include "ternary/quantized_reduce_scatter.h"
#include "ternary/ternary_allreduce.h"

namespace sieve::dispatch {

namespace {

using coll::Call;
using coll::CollArgs;
using gpu::CollKind;

// Step numbers of the quantized all-reduces and reduce-scatters issued for the
// shim (the same on every rank: every rank issues the same calls), kept with
// the communicator.
struct ShimTernarySteps {
  uint64_t next = 0;
};

bool IsFloat(kernels::DType t) {
  using kernels::DType;
  return t == DType::kFloat32 || t == DType::kFloat16 || t == DType::kBfloat16;
}

bool TernaryEligible(const CollArgs& a) {
  return IsFloat(a.dtype) && (a.op == kernels::RedOp::kSum || a.op == kernels::RedOp::kAvg);
}

// What SIEVE_NCCL_MODE asks of the calls the shim forwards (docs/modes.md): the
// levels of float sum/avg all-reduces and reduce-scatters (0: dense), the bits
// of float all-gathers (0: dense), and whether all-reduces go through the mask
// tracker. Plain calls (not served to NCCL) get none of it.
struct ShimCompression {
  bool auto_mask = false;
  int allreduce_levels = 0;
  int reduce_scatter_levels = 0;
  int allgather_bits = 0;
};

ShimCompression CompressionOf(const Comm& comm) {
  ShimCompression c;
  if (!comm.serving_nccl()) return c;
  switch (comm.config().nccl_mode) {
    case NcclMode::kDense:
      break;
    case NcclMode::kAutoMask:
      c.auto_mask = true;
      break;
    case NcclMode::kTernary:
      c.allreduce_levels = 1;
      break;
    case NcclMode::kAutoMaskTernary:
      c.auto_mask = true;
      c.allreduce_levels = 1;
      break;
    case NcclMode::kQ3:
      c.allreduce_levels = c.reduce_scatter_levels = 3;
      break;
    case NcclMode::kQ7:
      c.allreduce_levels = c.reduce_scatter_levels = 7;
      break;
    case NcclMode::kRsTernary:
      c.reduce_scatter_levels = 1;
      break;
    case NcclMode::kRsTernaryAg8:
      c.reduce_scatter_levels = 1;
      c.allgather_bits = 8;
      break;
    case NcclMode::kQ7Ag8:
      c.allreduce_levels = c.reduce_scatter_levels = 7;
      c.allgather_bits = 8;
      break;
  }
  return c;
}

// The shim's quantized call over `a` at `levels`: seed SIEVE_TERNARY_SEED, the
// next step of the communicator's count, the default block.
coll::TernaryArgs ShimQuantized(Comm& comm, const CollArgs& a, int levels) {
  coll::TernaryArgs t;
  t.base = a;
  t.seed = comm.config().ternary_seed;
  t.step = comm.State<ShimTernarySteps>().next++;
  t.levels = levels;
  return t;
}

// sieveAllReduce: the dense all-reduce; the mask tracker when the communicator
// has SIEVE_AUTO_MASK=1; for a communicator served to NCCL, whatever
// SIEVE_NCCL_MODE asks (auto-mask, quantized at L levels for float/half/bfloat16
// sum/avg, or both: the tracker with quantized data steps).
Status ConfiguredAllReduce(Comm& comm, const CollArgs& a) {
  const ShimCompression mode = CompressionOf(comm);
  const bool auto_mask = comm.config().auto_mask || mode.auto_mask;
  const bool quantized = mode.allreduce_levels > 0 && TernaryEligible(a);
  if (!quantized) return auto_mask ? mask::TrackedAllReduce(comm, a, mask::ExactStep)
                                   : coll::AllReduce(comm, a);
  coll::TernaryArgs t = ShimQuantized(comm, a, mode.allreduce_levels);
  if (!auto_mask) return coll::TernaryAllReduce(comm, t);
  return mask::TrackedAllReduce(comm, a, [&t](Comm& c, const CollArgs&, mask::MaskState* m) {
    return m != nullptr ? mask::TernaryAllReduceMasked(c, t, *m) : coll::TernaryAllReduce(c, t);
  });
}

// sieveReduceScatter: dense, or for the shim quantized at the mode's levels
// (float/half/bfloat16 sum/avg).
Status ConfiguredReduceScatter(Comm& comm, const CollArgs& a) {
  const int levels = CompressionOf(comm).reduce_scatter_levels;
  if (levels == 0 || !TernaryEligible(a)) return coll::ReduceScatter(comm, a);
  return coll::QuantizedReduceScatter(comm, ShimQuantized(comm, a, levels));
}

// sieveAllGather: dense, or for the shim block-scaled at the mode's bits (floats).
Status ConfiguredAllGather(Comm& comm, const CollArgs& a) {
  const int bits = CompressionOf(comm).allgather_bits;
  if (bits == 0 || !IsFloat(a.dtype)) return coll::AllGather(comm, a);
  return ternary::QuantizedAllGather(comm, a, bits);
}

// Whether sieveAllReduce is plain dense here (elementwise, so device buffers
// can be pipelined in chunks), rather than a mode that needs the whole buffer.
bool PlainDenseAllReduce(const Comm& comm) {
  const ShimCompression mode = CompressionOf(comm);
  return !comm.config().auto_mask && !mode.auto_mask && mode.allreduce_levels == 0;
}

// The same for the reduce-scatter and the all-gather of `a`: a quantized one
// needs every block whole (its scales and Philox indices span the buffer).
bool Quantized(const Comm& comm, algo::OpKind kind, const CollArgs& a) {
  const ShimCompression mode = CompressionOf(comm);
  if (kind == algo::OpKind::kReduceScatter)
    return mode.reduce_scatter_levels > 0 && TernaryEligible(a);
  if (kind == algo::OpKind::kAllGather) return mode.allgather_bits > 0 && IsFloat(a.dtype);
  return false;
}

using CollFn = Status (*)(Comm&, const CollArgs&);

// The host plan of a plain collective (a row of core/collectives.def with device
// 1); null for the other modes' kinds, so a new plain row without its case fails
// by name (NotDense) instead of running another collective.
CollFn HostPlan(algo::OpKind kind) {
  switch (kind) {
    case algo::OpKind::kAllReduce:
      return ConfiguredAllReduce;
    case algo::OpKind::kBroadcast:
      return coll::Broadcast;
    case algo::OpKind::kReduce:
      return coll::Reduce;
    case algo::OpKind::kAllGather:
      return ConfiguredAllGather;
    case algo::OpKind::kReduceScatter:
      return ConfiguredReduceScatter;
    default:
      return nullptr;
  }
}

Status NotDense(const Call& call) {
  return Status::Internal(
      StrFormat("%s is not a plain collective", algo::OpKindName(call.kind)));
}

Status RunOnHost(Comm& comm, const Call& call) {
  const CollFn fn = HostPlan(call.kind);
  return fn != nullptr ? fn(comm, call.args) : NotDense(call);
}

// Device buffers of a plain dense collective: direct or staged, as
// plan::ChooseDenseOnDevice says given the communicator's direct path.
bool GoesDirect(Comm& comm, CollKind kind, const CollArgs& a) {
  std::string why;
  const bool path = gpu::DirectPath(comm, &why);
  return plan::ChooseDenseOnDevice(comm, gpu::OpKindOf(kind), a.count,
                                   a.count * kernels::DTypeSize(a.dtype), path, why)
             .route == plan::DeviceRoute::kDirect;
}

Status EnqueueOnDevice(Comm& comm, const Call& call) {
  CollKind kind = CollKind::kAllReduce;
  const CollFn fn = HostPlan(call.kind);
  if (fn == nullptr || !gpu::DeviceKindOf(call.kind, &kind)) return NotDense(call);
  if (kind == CollKind::kAllReduce && !PlainDenseAllReduce(comm)) kind = CollKind::kAllReduceWhole;
  if (Quantized(comm, call.kind, call.args))
    kind = kind == CollKind::kReduceScatter ? CollKind::kReduceScatterWhole
                                            : CollKind::kAllGatherWhole;
  const bool whole = kind == CollKind::kAllReduceWhole || kind == CollKind::kReduceScatterWhole ||
                     kind == CollKind::kAllGatherWhole;
  if (!whole && GoesDirect(comm, kind, call.args))
    return gpu::EnqueueDirect(comm, kind, call.args, call.stream);
  Comm* c = &comm;
  return gpu::EnqueueDeviceCollective(comm, kind, call.args, call.stream,
                                      [c, fn](const CollArgs& staged) { return fn(*c, staged); });
}

const coll::Mode kDense = {&RunOnHost, &EnqueueOnDevice, nullptr};

}  // namespace

const coll::Mode& DenseMode() { return kDense; }

}  // namespace sieve::dispatch
