// Argument checks for the C entry points.
#include "api/arg_check.h"

#include <cstdint>

namespace sieve {

Status CheckComm(sieveComm_t handle, Comm** out) {
  std::shared_ptr<CommHandle> comm;
  SIEVE_RETURN_IF_ERROR(LookupComm(handle, &comm));
  if (comm->Busy())
    return Status::InvalidUsage(
        "a non-blocking operation on this communicator is still in progress; poll "
        "sieveCommGetAsyncError until it no longer returns sieveInProgress before the next call");
  Comm* impl = comm->Impl();
  if (impl == nullptr) {
    std::lock_guard<std::mutex> lock(comm->async->mu);
    return Status::InvalidUsage(
        StrFormat("communicator could not be created (%s); destroy it",
                  comm->async->init_error.message().c_str()));
  }
  if (impl->revoked())
    return Status::InvalidUsage(
        "communicator was revoked (sieveCommRevoke): only sieveCommShrink, sieveCommSplit, the "
        "failed-rank queries, sieveCommDestroy and sieveCommAbort may be called on it");
  if (impl->AsyncError() != Code::kOk) {
    return Status::InvalidUsage(
        StrFormat("communicator is unusable after an earlier failure (%s); destroy or abort it",
                  impl->FatalError().c_str()));
  }
  *out = impl;
  return Status::OK();
}

Status CheckDataType(int datatype, kernels::DType* out) {
  int v = datatype;
  if (v < 0 || v >= kernels::kNumDTypes)
    return Status::InvalidArgument(
        StrFormat("datatype %d is not a sieveDataType_t (0..%d)", v, kernels::kNumDTypes - 1));
  *out = static_cast<kernels::DType>(v);
  return Status::OK();
}

Status CheckRedOp(int op, kernels::RedOp* out) {
  int v = op;
  if (v < 0 || v >= kernels::kNumRedOps)
    return Status::InvalidArgument(
        StrFormat("op %d is not a built-in sieveRedOp_t (sum, prod, max, min, avg)", v));
  *out = static_cast<kernels::RedOp>(v);
  return Status::OK();
}

Status CheckBuffer(const void* buffer, const char* name, size_t count) {
  if (count > 0 && buffer == nullptr)
    return Status::InvalidArgument(StrFormat("%s is NULL with count %zu", name, count));
  return Status::OK();
}

Status CheckByteSize(size_t count, size_t blocks, size_t elem_size, const char* name) {
  if (count != 0 && (blocks > SIZE_MAX / count || count * blocks > SIZE_MAX / elem_size ||
                     count * blocks * elem_size > static_cast<size_t>(INT64_MAX))) {
    // The factors, not their (wrapped) product.
    return Status::InvalidArgument(
        blocks == 1 ? StrFormat("%s %zu x %zu bytes per element overflows the addressable size",
                                name, count, elem_size)
                    : StrFormat("%s %zu x %zu ranks x %zu bytes per element overflows the "
                                "addressable size",
                                name, count, blocks, elem_size));
  }
  return Status::OK();
}

Status CheckRank(int rank, int nranks, const char* name) {
  if (rank < 0 || rank >= nranks)
    return Status::InvalidArgument(
        StrFormat("%s %d is not a rank of this communicator (0..%d)", name, rank, nranks - 1));
  return Status::OK();
}

Status CheckOverlap(const void* send, size_t send_bytes, const void* recv, size_t recv_bytes,
                    uintptr_t in_place, const char* in_place_text) {
  const auto s = reinterpret_cast<uintptr_t>(send), r = reinterpret_cast<uintptr_t>(recv);
  if (send == nullptr || recv == nullptr || send_bytes == 0 || recv_bytes == 0 || s == in_place)
    return Status::OK();
  // Compared as distances, so no end address is formed (it could wrap).
  const bool overlap = s >= r ? s - r < recv_bytes : r - s < send_bytes;
  if (!overlap) return Status::OK();
  return Status::InvalidArgument(StrFormat(
      "sendbuff %p (%zu bytes) and recvbuff %p (%zu bytes) overlap; buffers must be disjoint "
      "or in place (%s)",
      send, send_bytes, recv, recv_bytes, in_place_text));
}

Status CheckFloatSumAvg(kernels::DType dtype, kernels::RedOp op, const char* name) {
  using kernels::DType;
  using kernels::RedOp;
  if (dtype != DType::kFloat32 && dtype != DType::kFloat16 && dtype != DType::kBfloat16)
    return Status::InvalidArgument(StrFormat(
        "datatype %s is not supported by %s (float32, float16, bfloat16)",
        kernels::DTypeName(dtype), name));
  if (op != RedOp::kSum && op != RedOp::kAvg)
    return Status::InvalidArgument(StrFormat(
        "op %s is not supported by %s (sum, avg)", kernels::RedOpName(op), name));
  return Status::OK();
}

}  // namespace sieve
