// One case per row of core/collectives.def (-Wswitch points at a missing one).
#include "dispatch/modes.h"

#include "dispatch/dense_mode.h"
#include "gpu/device_p2p.h"
#include "mask/masked_mode.h"
#include "subnet/subnet_mode.h"
#include "ternary/quantized_allgather.h"
#include "ternary/ternary_mode.h"
#include "topk/topk_mode.h"

namespace sieve::dispatch {

namespace {

Status NotACall(Comm&, const coll::Call& call) {
  return Status::Internal(
      StrFormat("%s is a step of other calls, not a call of its own", algo::OpKindName(call.kind)));
}

const coll::Mode kNotACall = {&NotACall, nullptr, "is not a call of its own"};

}  // namespace

const coll::Mode& ModeOf(algo::OpKind kind) {
  switch (kind) {
    case algo::OpKind::kAllReduce:
    case algo::OpKind::kBroadcast:
    case algo::OpKind::kReduce:
    case algo::OpKind::kAllGather:
    case algo::OpKind::kReduceScatter:
      return DenseMode();
    case algo::OpKind::kMaskedAllReduce:
      return mask::MaskedMode();
    case algo::OpKind::kTernaryAllReduce:
      return ternary::TernaryMode();
    case algo::OpKind::kQuantizedReduceScatter:
      return ternary::QuantizedReduceScatterMode();
    case algo::OpKind::kQuantizedAllGather:
      return ternary::QuantizedAllGatherMode();
    case algo::OpKind::kSubnetAllReduce:
    case algo::OpKind::kD2ftAllReduce:
      return subnet::SubnetMode();
    case algo::OpKind::kTopkAllReduce:
      return topk::TopkMode();
    case algo::OpKind::kMaskUnion:
      return kNotACall;
  }
  return kNotACall;
}

P2pOp::DeviceBatch DeviceSendRecv() { return &gpu::EnqueueDeviceP2p; }

}  // namespace sieve::dispatch
