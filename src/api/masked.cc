// Masked all-reduce entry points: mask handles (values looked up in a table of
// live handles, so a stale or foreign one is reported, never dereferenced),
// registration, and sieveAllReduceMasked described and submitted like any collective.
#include <memory>

#include "api/api_guard.h"
#include "api/arg_check.h"
#include "api/live_handles.h"
#include "api/mask_handle.h"
#include "comm/group.h"
#include "dispatch/dispatch.h"
#include "mask/masked_mode.h"

namespace {

using sieve::Status;
using Masks = sieve::LiveHandles<sieveMask, sieve::mask::MaskState>;

Masks& LiveMasks() {
  static auto* live = new Masks(
      "mask", "mask is not a registered mask (deregistered, never registered, or corrupted)",
      0x5c4d);  // outlives static dtors
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
  return CheckRegisteredFor("mask", (*state)->comm_serial, (*state)->count, impl, count);
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
    // Kept positions are 32-bit indices; bounding count also keeps the bitmap's
    // size arithmetic ((count + 63) / 64 words) from wrapping.
    if (count > sieve::mask::kMaxMaskCount)
      return Status::InvalidArgument(sieve::StrFormat(
          "count %zu exceeds the masked all-reduce's limit of 2^32 elements", count));
    if (sieve::InGroup())
      return Status::InvalidUsage("sieveMaskRegister cannot be called inside a group");
    SIEVE_RETURN_IF_ERROR(sieve::dispatch::RefuseDeviceMemory(
        "mask", mask, "mask is device memory; masks are registered from host memory"));
    std::shared_ptr<sieve::mask::MaskState> state;
    // After any device work queued on the communicator (one order per communicator).
    SIEVE_RETURN_IF_ERROR(impl->RunInOrder([&] {
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
    SIEVE_RETURN_IF_ERROR(sieve::CheckByteSize(count, 1, sieve::kernels::DTypeSize(args.dtype),
                                               "count"));
    const size_t bytes = count * sieve::kernels::DTypeSize(args.dtype);
    SIEVE_RETURN_IF_ERROR(sieve::CheckOverlap(sendbuff, bytes, recvbuff, bytes,
                                              reinterpret_cast<uintptr_t>(recvbuff),
                                              "sendbuff == recvbuff"));
    auto params = std::make_shared<sieve::mask::MaskedParams>();
    SIEVE_RETURN_IF_ERROR(sieve::CheckMaskUse(mask, impl, count, &params->mask));
    args.send = sendbuff;
    args.recv = recvbuff;
    args.count = count;
    return sieve::dispatch::SubmitCollective(impl, "sieveAllReduceMasked",
                                             sieve::algo::OpKind::kMaskedAllReduce, args,
                                             std::move(params), stream);
  });
}

}  // extern "C"
