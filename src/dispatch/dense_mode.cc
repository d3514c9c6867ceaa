// How a plain collective call runs.
#include "dispatch/dense_mode.h"

#include <string>

#include "gpu/device_collectives.h"
#include "gpu/direct_collectives.h"
#include "gpu/direct_path.h"
#include "mask/mask_tracker.h"
#include "plan/compression_choice.h"
#include "plan/device_choice.h"
#include "ternary/auto_levels.h"
#include "ternary/masked_ternary.h"
#include "ternary/ternary_allreduce.h"

namespace sieve::dispatch {

namespace {

using coll::Call;
using coll::CollArgs;
using gpu::CollKind;

// Step numbers of the ternary all-reduces issued for the shim (the same on every
// rank: every rank issues the same calls), kept with the communicator.
struct ShimTernarySteps {
  uint64_t next = 0;
};

bool TernaryEligible(const CollArgs& a) {
  using kernels::DType;
  using kernels::RedOp;
  return (a.dtype == DType::kFloat32 || a.dtype == DType::kFloat16 ||
          a.dtype == DType::kBfloat16) &&
         (a.op == RedOp::kSum || a.op == RedOp::kAvg);
}

// sieveAllReduce: the dense all-reduce; the mask tracker when the communicator
// has SIEVE_AUTO_MASK=1; for a communicator served to NCCL, whatever
// SIEVE_NCCL_MODE asks (auto-mask, ternary for float/half/bfloat16 sum/avg, or
// both: the tracker with ternary data steps; or auto: dense or L levels per call).
Status ConfiguredAllReduce(Comm& comm, const CollArgs& a) {
  const Config& config = comm.config();
  const NcclMode mode = comm.serving_nccl() ? config.nccl_mode : NcclMode::kDense;
  if (mode == NcclMode::kAuto && TernaryEligible(a)) {
    coll::TernaryArgs t;
    t.base = a;
    t.seed = config.ternary_seed;
    t.step = comm.State<ShimTernarySteps>().next++;
    return ternary::RunWithAutoLevels(comm, a.count, a.dtype, t.block, [&](int levels) {
      if (levels == plan::kAutoDense) return coll::AllReduce(comm, a);
      t.levels = levels;
      return coll::TernaryAllReduce(comm, t);
    });
  }
  bool auto_mask =
      config.auto_mask || mode == NcclMode::kAutoMask || mode == NcclMode::kAutoMaskTernary;
  bool ternary =
      (mode == NcclMode::kTernary || mode == NcclMode::kAutoMaskTernary) && TernaryEligible(a);
  if (!ternary) return auto_mask ? mask::TrackedAllReduce(comm, a, mask::ExactStep)
                                 : coll::AllReduce(comm, a);
  coll::TernaryArgs t;
  t.base = a;
  t.seed = config.ternary_seed;
  t.step = comm.State<ShimTernarySteps>().next++;
  if (!auto_mask) return coll::TernaryAllReduce(comm, t);
  return mask::TrackedAllReduce(comm, a, [&t](Comm& c, const CollArgs&, mask::MaskState* m) {
    return m != nullptr ? mask::TernaryAllReduceMasked(c, t, *m) : coll::TernaryAllReduce(c, t);
  });
}

// Whether sieveAllReduce is plain dense here (elementwise, so device buffers
// can be pipelined in chunks), rather than a mode that needs the whole buffer.
bool PlainDenseAllReduce(const Comm& comm) {
  const Config& config = comm.config();
  return !config.auto_mask && (!comm.serving_nccl() || config.nccl_mode == NcclMode::kDense);
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
      return coll::AllGather;
    case algo::OpKind::kReduceScatter:
      return coll::ReduceScatter;
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
  if (kind != CollKind::kAllReduceWhole && GoesDirect(comm, kind, call.args))
    return gpu::EnqueueDirect(comm, kind, call.args, call.stream);
  Comm* c = &comm;
  return gpu::EnqueueDeviceCollective(comm, kind, call.args, call.stream,
                                      [c, fn](const CollArgs& staged) { return fn(*c, staged); });
}

const coll::Mode kDense = {&RunOnHost, &EnqueueOnDevice, nullptr};

}  // namespace

const coll::Mode& DenseMode() { return kDense; }

}  // namespace sieve::dispatch
