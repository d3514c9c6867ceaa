// sieveAllReduceTernary: checks (floating dtypes, sum/avg, params), then the
// ternary all-reduce queued like any collective.
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "api/api_guard.h"
#include "api/arg_check.h"
#include "ternary/ternary_allreduce.h"
#include "api/mask_handle.h"
#include "comm/group.h"
#include "gpu/device_collectives.h"
#include "mask/device_masked.h"
#include "plan/device_choice.h"
#include "ternary/device_masked_ternary.h"
#include "ternary/device_residuals.h"
#include "ternary/device_ternary.h"
#include "ternary/masked_ternary.h"
#include "kernels/philox.h"

namespace {

using sieve::Status;

// The error-feedback residuals of one communicator, per buffer.
struct Residuals {
  std::map<std::tuple<const void*, size_t, int, const void*>, std::vector<float>> by_buffer;
};

float* ResidualFor(sieve::Comm& comm, const void* send, size_t count, int dtype,
                   const void* mask, size_t elems) {
  std::shared_ptr<void>& slot = comm.ternary_state();
  if (!slot) slot = std::make_shared<Residuals>();
  std::vector<float>& r =
      static_cast<Residuals*>(slot.get())->by_buffer[std::make_tuple(send, count, dtype, mask)];
  if (r.size() != elems) r.assign(elems, 0.0f);
  return r.data();
}

Status CheckTernaryTypes(sieve::kernels::DType dtype, sieve::kernels::RedOp op) {
  using sieve::kernels::DType;
  using sieve::kernels::RedOp;
  if (dtype != DType::kFloat32 && dtype != DType::kFloat16 && dtype != DType::kBfloat16)
    return Status::InvalidArgument(sieve::StrFormat(
        "datatype %s is not supported by the ternary all-reduce (float32, float16, bfloat16)",
        sieve::kernels::DTypeName(dtype)));
  if (op != RedOp::kSum && op != RedOp::kAvg)
    return Status::InvalidArgument(sieve::StrFormat(
        "op %s is not supported by the ternary all-reduce (sum, avg)",
        sieve::kernels::RedOpName(op)));
  return Status::OK();
}

Status CheckTernaryParams(const sieveTernaryParams_t* params, size_t count) {
  if (params == nullptr) return Status::InvalidArgument("params is NULL");
  if (count > sieve::kernels::kPhiloxMaxElements)
    return Status::InvalidArgument(sieve::StrFormat(
        "count %zu exceeds the ternary all-reduce's limit of 2^34 elements", count));
  return Status::OK();
}

// A ternary all-reduce of host buffers (the caller's, or a device call's
// staging): residuals, if any, in args.residual.
Status RunOnHost(sieve::Comm* impl, const sieve::coll::TernaryArgs& args,
                 const std::shared_ptr<sieve::mask::MaskState>& mask) {
  Status st = mask ? sieve::mask::TernaryAllReduceMasked(*impl, args, *mask)
                   : sieve::coll::TernaryAllReduce(*impl, args);
  if (st.ok()) impl->LogTransportOnce();
  return st;
}

// What identifies a buffer's error-feedback residual, and how many elements
// it has (the kept ones under a mask); feedback off: `on` false.
struct Feedback {
  bool on = false;
  const void* mask_handle = nullptr;
  size_t elems = 0;
};

// A ternary all-reduce of device buffers, queued on `stream`.
Status SubmitOnDevice(sieve::Comm* impl, sieve::coll::TernaryArgs args,
                      std::shared_ptr<sieve::mask::MaskState> mask, const Feedback& feedback,
                      sieveStream_t stream) {
  using sieve::plan::DeviceRoute;
  const size_t elems = mask ? mask->idx.size() : args.base.count;  // quantized elements
  const DeviceRoute route = sieve::plan::ChooseTernaryOnDevice(*impl, elems, feedback.on,
                                                               mask != nullptr,
                                                               sieve::gpu::CanPackOnDevice())
                                .route;
  // The flat plan (always with error feedback): every kernel on the stream,
  // packed first under a mask; only scales, wire and final sums are staged
  // (ternary/device_ternary.h, ternary/device_masked_ternary.h).
  if (route == DeviceRoute::kKernels)
    return sieve::SubmitCollective(impl, [impl, args, mask, feedback, stream] {
      sieve::gpu::DeviceResidual* residual = nullptr;
      if (feedback.on)
        SIEVE_RETURN_IF_ERROR(sieve::gpu::DeviceResidualFor(
            *impl, args.base.send, args.base.count, static_cast<int>(args.base.dtype),
            feedback.mask_handle, feedback.elems, stream, &residual));
      return mask ? sieve::gpu::EnqueueDeviceMaskedTernary(*impl, args, mask, residual, stream)
                  : sieve::gpu::EnqueueDeviceTernary(*impl, args, residual, stream);
    });
  // Masked, hierarchical (no error feedback): packed on the device, the nnz
  // kept elements staged and run through the hierarchical plan on the host.
  if (route == DeviceRoute::kPackedOnDevice)
    return sieve::SubmitCollective(impl, [impl, args, stream, mask] {
      return sieve::gpu::EnqueueDevicePacked(
          *impl, "masked ternary allreduce (hierarchical plan, quantized on the host)",
          args.base, mask, stream, [impl, args, mask](const sieve::coll::CollArgs& packed) {
            sieve::coll::TernaryArgs t = args;
            t.base = packed;
            return sieve::mask::TernaryAllReduceMaskedPacked(*impl, t, *mask);
          });
    });
  // Else the whole buffer is staged and quantized on the host.
  if (feedback.on)
    args.residual = ResidualFor(*impl, args.base.send, args.base.count,
                                static_cast<int>(args.base.dtype), feedback.mask_handle,
                                feedback.elems);
  return sieve::SubmitCollective(impl, [impl, args, stream, mask] {
    auto host = [impl, args, mask](const sieve::coll::CollArgs& staged) {
      sieve::coll::TernaryArgs t = args;
      t.base = staged;
      return RunOnHost(impl, t, mask);
    };
    return sieve::gpu::EnqueueDeviceCollective(*impl, sieve::gpu::CollKind::kAllReduceWhole,
                                               args.base, stream, host);
  });
}

}  // namespace

extern "C" {

sieveResult_t sieveAllReduceTernary(const void* sendbuff, void* recvbuff, size_t count,
                                    sieveDataType_t datatype, sieveRedOp_t op,
                                    const sieveTernaryParams_t* params, sieveComm_t comm,
                                    sieveStream_t stream) {
  return sieve::Guard(sieve::IdleImpl(comm), "sieveAllReduceTernary", [&]() -> Status {
    sieve::Comm* impl = nullptr;
    sieve::coll::TernaryArgs args;
    SIEVE_RETURN_IF_ERROR(sieve::CheckComm(comm, &impl));
    SIEVE_RETURN_IF_ERROR(sieve::CheckDataType(sieve::EnumValue(datatype), &args.base.dtype));
    SIEVE_RETURN_IF_ERROR(sieve::CheckRedOp(sieve::EnumValue(op), &args.base.op));
    SIEVE_RETURN_IF_ERROR(CheckTernaryTypes(args.base.dtype, args.base.op));
    SIEVE_RETURN_IF_ERROR(sieve::CheckByteSize(count, 1, sieve::kernels::DTypeSize(args.base.dtype),
                                               "count"));
    SIEVE_RETURN_IF_ERROR(CheckTernaryParams(params, count));
    SIEVE_RETURN_IF_ERROR(sieve::CheckBuffer(sendbuff, "sendbuff", count));
    SIEVE_RETURN_IF_ERROR(sieve::CheckBuffer(recvbuff, "recvbuff", count));
    if (count == 0) return Status::OK();
    args.base.send = sendbuff;
    args.base.recv = recvbuff;
    args.base.count = count;
    args.seed = params->seed;
    args.step = params->step;
    args.block = params->block_size == 0 ? 2048 : params->block_size;
    std::shared_ptr<sieve::mask::MaskState> mask;
    if (params->mask != nullptr)
      SIEVE_RETURN_IF_ERROR(sieve::CheckMaskUse(params->mask, impl, count, &mask));
    Feedback feedback;
    feedback.on = params->error_feedback != 0;
    feedback.mask_handle = params->mask;
    feedback.elems = mask ? mask->idx.size() : count;  // masked: residuals of kept elements
    sieve::gpu::MemoryKind memory = sieve::gpu::MemoryKind::kHost;
    SIEVE_RETURN_IF_ERROR(sieve::gpu::ClassifyBuffers(
        {{"sendbuff", sendbuff}, {"recvbuff", recvbuff}}, &memory));
    if (memory == sieve::gpu::MemoryKind::kDevice)
      return SubmitOnDevice(impl, args, mask, feedback, stream);
    if (feedback.on)
      args.residual = ResidualFor(*impl, sendbuff, count, static_cast<int>(args.base.dtype),
                                  params->mask, feedback.elems);
    return sieve::SubmitHostCollective(impl, [impl, args, mask] {
      return sieve::gpu::RunHostCall(*impl, [&] { return RunOnHost(impl, args, mask); });
    });
  });
}

}  // extern "C"
