// Masked all-reduce entry points: mask handles (a magic plus a table of live
// handles, so a freed or foreign pointer is reported, never dereferenced),
// registration, and sieveAllReduceMasked queued like any collective.
#include <memory>

#include "api/api_guard.h"
#include "api/arg_check.h"
#include "api/live_handles.h"
#include "api/mask_handle.h"
#include "comm/group.h"
#include "gpu/device_collectives.h"
#include "mask/device_masked.h"
#include "mask/masked_allreduce.h"
#include "plan/device_choice.h"

constexpr uint64_t kSieveMaskMagic = 0x53494556454d534bull;  // "SIEVEMSK"

struct sieveMask {
  uint64_t magic = kSieveMaskMagic;
  std::shared_ptr<sieve::mask::MaskState> state;
};

namespace {

using sieve::Status;
using Masks = sieve::LiveHandles<sieveMask, kSieveMaskMagic>;

Masks& LiveMasks() {
  static auto* live = new Masks("mask");  // outlives static dtors
  return *live;
}

Status CheckMaskEnums(int format, int policy) {
  if (format != sieveMaskBitmap && format != sieveMaskBytes)
    return Status::InvalidArgument(sieve::StrFormat(
        "format %d is not a sieveMaskFormat_t (sieveMaskBitmap, sieveMaskBytes)", format));
  if (policy != sieveMaskStrict && policy != sieveMaskUnion)
    return Status::InvalidArgument(sieve::StrFormat(
        "policy %d is not a sieveMaskPolicy_t (sieveMaskStrict, sieveMaskUnion)", policy));
  return Status::OK();
}

}  // namespace

namespace sieve {

Status CheckMaskUse(sieveMask_t mask, const sieve::Comm* impl, size_t count,
                    std::shared_ptr<sieve::mask::MaskState>* state) {
  SIEVE_RETURN_IF_ERROR(LiveMasks().Lookup(mask, state));
  return CheckRegisteredFor("mask", (*state)->comm, (*state)->count, impl, count);
}

}  // namespace sieve

extern "C" {

sieveResult_t sieveMaskRegister(sieveComm_t comm, const void* mask, sieveMaskFormat_t format,
                                size_t count, sieveMaskPolicy_t policy, sieveMask_t* handle) {
  return sieve::Guard(sieve::IdleImpl(comm), "sieveMaskRegister", [&]() -> Status {
    sieve::Comm* impl = nullptr;
    SIEVE_RETURN_IF_ERROR(sieve::CheckComm(comm, &impl));
    if (handle == nullptr) return Status::InvalidArgument("handle is NULL");
    const int fmt = sieve::EnumValue(format), pol = sieve::EnumValue(policy);
    SIEVE_RETURN_IF_ERROR(CheckMaskEnums(fmt, pol));
    SIEVE_RETURN_IF_ERROR(sieve::CheckBuffer(mask, "mask", count));
    if (sieve::InGroup())
      return Status::InvalidUsage("sieveMaskRegister cannot be called inside a group");
    sieve::gpu::MemoryKind memory = sieve::gpu::MemoryKind::kHost;
    SIEVE_RETURN_IF_ERROR(sieve::gpu::ClassifyBuffers({{"mask", mask}}, &memory));
    if (memory == sieve::gpu::MemoryKind::kDevice)
      return Status::InvalidArgument("mask is device memory; masks are registered from host memory");
    std::shared_ptr<sieve::mask::MaskState> state;
    SIEVE_RETURN_IF_ERROR(sieve::gpu::RunHostCall(*impl, [&] {
      return sieve::mask::Register(*impl, mask, static_cast<sieve::mask::Format>(fmt), count,
                                   static_cast<sieve::mask::Policy>(pol), &state);
    }));
    *handle = LiveMasks().Publish(std::move(state));
    return Status::OK();
  });
}

sieveResult_t sieveMaskDeregister(sieveMask_t handle) {
  return sieve::Guard(nullptr, "sieveMaskDeregister",
                      [&]() -> Status { return LiveMasks().Remove(handle); });
}

sieveResult_t sieveMaskNnz(sieveMask_t handle, size_t* nnz) {
  return sieve::Guard(nullptr, "sieveMaskNnz", [&]() -> Status {
    if (nnz == nullptr) return Status::InvalidArgument("nnz is NULL");
    std::shared_ptr<sieve::mask::MaskState> state;
    SIEVE_RETURN_IF_ERROR(LiveMasks().Lookup(handle, &state));
    *nnz = state->idx.size();
    return Status::OK();
  });
}

sieveResult_t sieveAllReduceMasked(const void* sendbuff, void* recvbuff, size_t count,
                                   sieveDataType_t datatype, sieveRedOp_t op, sieveMask_t mask,
                                   sieveComm_t comm, sieveStream_t stream) {
  return sieve::Guard(sieve::IdleImpl(comm), "sieveAllReduceMasked", [&]() -> Status {
    sieve::Comm* impl = nullptr;
    sieve::coll::CollArgs args;
    SIEVE_RETURN_IF_ERROR(sieve::CheckComm(comm, &impl));
    SIEVE_RETURN_IF_ERROR(sieve::CheckDataType(sieve::EnumValue(datatype), &args.dtype));
    SIEVE_RETURN_IF_ERROR(sieve::CheckRedOp(sieve::EnumValue(op), &args.op));
    SIEVE_RETURN_IF_ERROR(sieve::CheckBuffer(sendbuff, "sendbuff", count));
    SIEVE_RETURN_IF_ERROR(sieve::CheckBuffer(recvbuff, "recvbuff", count));
    std::shared_ptr<sieve::mask::MaskState> state;
    SIEVE_RETURN_IF_ERROR(sieve::CheckMaskUse(mask, impl, count, &state));
    if (count == 0) return Status::OK();
    args.send = sendbuff;
    args.recv = recvbuff;
    args.count = count;
    sieve::gpu::MemoryKind memory = sieve::gpu::MemoryKind::kHost;
    SIEVE_RETURN_IF_ERROR(sieve::gpu::ClassifyBuffers(
        {{"sendbuff", sendbuff}, {"recvbuff", recvbuff}}, &memory));
    auto host = [impl, state](const sieve::coll::CollArgs& a) {
      Status st = sieve::mask::AllReduceMasked(*impl, a, *state);
      if (st.ok()) impl->LogTransportOnce();
      return st;
    };
    // Packed on the device when kernels are built in (only nnz elements are
    // staged); else the whole dense buffer is staged and packed on the host.
    if (memory == sieve::gpu::MemoryKind::kDevice &&
        sieve::plan::ChooseMaskedOnDevice(*impl, state->idx.size(),
                                          sieve::gpu::CanPackOnDevice())
                .route == sieve::plan::DeviceRoute::kPackedOnDevice)
      return sieve::SubmitCollective(impl, [impl, args, stream, state] {
        return sieve::gpu::EnqueueDevicePacked(
            *impl, "masked allreduce", args, state, stream,
            [impl, state](const sieve::coll::CollArgs& packed) {
              return sieve::mask::AllReduceMaskedPacked(*impl, packed, *state);
            });
      });
    if (memory == sieve::gpu::MemoryKind::kDevice)
      return sieve::SubmitCollective(impl, [impl, args, stream, host] {
        return sieve::gpu::EnqueueDeviceCollective(*impl, sieve::gpu::CollKind::kAllReduceWhole,
                                                   args, stream, host);
      });
    return sieve::SubmitHostCollective(impl, [impl, args, host] {
      return sieve::gpu::RunHostCall(*impl, [&] { return host(args); });
    });
  });
}

}  // extern "C"
