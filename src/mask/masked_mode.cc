// How a masked all-reduce call runs.
#include "mask/masked_mode.h"

#include "gpu/device_collectives.h"
#include "mask/device_masked.h"
#include "mask/masked_allreduce.h"
#include "plan/device_choice.h"

namespace sieve::mask {

namespace {

using coll::Call;

Status RunOnHost(Comm& comm, const Call& call) {
  return AllReduceMasked(comm, call.args, *call.Params<MaskedParams>().mask);
}

// Packed on the device when kernels are built in (only nnz elements are
// staged); else the whole dense buffer is staged and packed on the host.
Status EnqueueOnDevice(Comm& comm, const Call& call) {
  const std::shared_ptr<MaskState>& mask = call.Params<MaskedParams>().mask;
  Comm* c = &comm;
  if (plan::ChooseMaskedOnDevice(comm, mask->idx.size(), gpu::CanPackOnDevice()).route ==
      plan::DeviceRoute::kPackedOnDevice)
    return gpu::EnqueueDevicePacked(comm, "masked allreduce", call.args, mask, call.stream,
                                    [c, mask](const coll::CollArgs& packed) {
                                      return AllReduceMaskedPacked(*c, packed, *mask);
                                    });
  return gpu::EnqueueDeviceCollective(comm, gpu::CollKind::kAllReduceWhole, call.args,
                                      call.stream, [c, call](const coll::CollArgs& staged) {
                                        return AllReduceMasked(*c, staged,
                                                               *call.Params<MaskedParams>().mask);
                                      });
}

const coll::Mode kMasked = {&RunOnHost, &EnqueueOnDevice, nullptr};

}  // namespace

const coll::Mode& MaskedMode() { return kMasked; }

}  // namespace sieve::mask
