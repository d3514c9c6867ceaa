// sieveAllReduceTernary: checks (floating dtypes, sum/avg, params), then the
// ternary all-reduce queued like any collective.
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "api/api_guard.h"
#include "api/arg_check.h"
#include "coll/ternary_allreduce.h"
#include "api/mask_handle.h"
#include "comm/group.h"
#include "core/log.h"
#include "gpu/device_collectives.h"
#include "gpu/device_masked.h"
#include "gpu/device_ternary.h"
#include "mask/masked_ternary.h"
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

// Why a ternary all-reduce on device buffers stages the whole buffer.
const char* WholeBufferReason(bool kernels, const sieve::coll::TernaryArgs& args) {
  if (!kernels) return "no device kernels in this libsieve or driver";
  if (args.residual != nullptr) return "error feedback keeps its residual on the host";
  return "hierarchical plan, or a mask that keeps nothing";
}

// A ternary all-reduce of device buffers, queued on `stream`.
Status SubmitOnDevice(sieve::Comm* impl, const sieve::coll::TernaryArgs& args,
                      std::shared_ptr<sieve::mask::MaskState> mask, sieveStream_t stream,
                      sieve::gpu::HostCollective host) {
  const bool kernels = sieve::gpu::CanPackOnDevice();
  // Under a mask, packed on the device: only the nnz kept elements are staged
  // (quantized on the host from there).
  if (mask && !mask->idx.empty() && kernels)
    return sieve::SubmitCollective(impl, [impl, args, stream, mask] {
      return sieve::gpu::EnqueueDevicePacked(
          *impl, "masked ternary allreduce", args.base, mask, stream,
          [impl, args, mask](const sieve::coll::CollArgs& packed) {
            sieve::coll::TernaryArgs t = args;
            t.base = packed;
            return sieve::mask::TernaryAllReduceMaskedPacked(*impl, t, *mask);
          });
    });
  // Dense: abs-max, quantize and dequantize kernels on the stream; only the
  // scales, the 2-bit wire and the final sums are staged (gpu/device_ternary.h).
  if (!mask && kernels && sieve::coll::TernaryIsFlatDense(*impl, args))
    return sieve::SubmitCollective(impl, [impl, args, stream] {
      return sieve::gpu::EnqueueDeviceTernary(*impl, args, stream);
    });
  // Else the whole buffer is staged and quantized on the host.
  return sieve::SubmitCollective(impl, [impl, args, stream, host, kernels] {
    const char* why = WholeBufferReason(kernels, args);
    auto logged = [impl, host, why](const sieve::coll::CollArgs& staged) {
      if (impl->FirstUse(std::string("ternary allreduce on device buffers, whole: ") + why, 0))
        SIEVE_INFO(sieve::kLogInit,  // on the progress thread, as the device paths' lines
                   "ternary allreduce on device buffers: whole buffer staged and quantized on "
                   "the host (%s)", why);
      return host(staged);
    };
    return sieve::gpu::EnqueueDeviceCollective(*impl, sieve::gpu::CollKind::kAllReduceWhole,
                                               args.base, stream, logged);
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
    if (params->error_feedback != 0) {
      size_t elems = mask ? mask->idx.size() : count;  // masked: residuals of kept elements
      args.residual = ResidualFor(*impl, sendbuff, count, static_cast<int>(args.base.dtype),
                                  params->mask, elems);
    }
    sieve::gpu::MemoryKind memory = sieve::gpu::MemoryKind::kHost;
    SIEVE_RETURN_IF_ERROR(sieve::gpu::ClassifyBuffers(
        {{"sendbuff", sendbuff}, {"recvbuff", recvbuff}}, &memory));
    auto host = [impl, args, mask](const sieve::coll::CollArgs& staged) {
      sieve::coll::TernaryArgs t = args;
      t.base = staged;
      Status st = mask ? sieve::mask::TernaryAllReduceMasked(*impl, t, *mask)
                       : sieve::coll::TernaryAllReduce(*impl, t);
      if (st.ok()) impl->LogTransportOnce();
      return st;
    };
    if (memory == sieve::gpu::MemoryKind::kDevice)
      return SubmitOnDevice(impl, args, mask, stream, host);
    return sieve::SubmitHostCollective(impl, [impl, args, host] {
      return sieve::gpu::RunHostCall(*impl, [&] { return host(args.base); });
    });
  });
}

}  // extern "C"
