// The collectives Sieve implements directly (AllReduce, Broadcast, Bcast, Reduce, AllGather,
// ReduceScatter), point to point (Send, Recv) and groups: argument translation only.
#include "shim_internal.h"

using sieve_nccl::CallScope;
using sieve_nccl::EnumFromInt;
using sieve_nccl::FromSieve;
using sieve_nccl::RawEnum;
using sieve_nccl::SieveOf;
using sieve_nccl::ToSieveType;

namespace {

sieveRedOp_t ToSieveOp(ncclRedOp_t op) { return EnumFromInt<sieveRedOp_t>(RawEnum(op)); }

// What every entry point below does around its one Sieve call: counts the call on comm,
// translates the datatype (failing as `call` on fp8) and maps Sieve's result back to NCCL's.
// sieve_call(type) makes the Sieve call with the translated datatype.
template <typename SieveCall>
ncclResult_t Forward(ncclComm_t comm, const char* call, ncclDataType_t datatype,
                     SieveCall sieve_call) {
  CallScope scope(comm);
  sieveDataType_t type;
  ncclResult_t r = ToSieveType(comm, call, datatype, &type);
  if (r != ncclSuccess) return r;
  return FromSieve(comm, sieve_call(type));
}

}  // namespace

extern "C" {

ncclResult_t ncclAllReduce(const void* sendbuff, void* recvbuff, size_t count,
                           ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                           struct CUstream_st* stream) {
  return Forward(comm, "ncclAllReduce", datatype, [&](sieveDataType_t type) {
    return sieveAllReduce(sendbuff, recvbuff, count, type, ToSieveOp(op), SieveOf(comm), stream);
  });
}

ncclResult_t ncclBroadcast(const void* sendbuff, void* recvbuff, size_t count,
                           ncclDataType_t datatype, int root, ncclComm_t comm,
                           struct CUstream_st* stream) {
  return Forward(comm, "ncclBroadcast", datatype, [&](sieveDataType_t type) {
    return sieveBroadcast(sendbuff, recvbuff, count, type, root, SieveOf(comm), stream);
  });
}

// The deprecated in-place broadcast.
ncclResult_t ncclBcast(void* buff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm,
                       struct CUstream_st* stream) {
  return ncclBroadcast(buff, buff, count, datatype, root, comm, stream);
}

ncclResult_t ncclReduce(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                        ncclRedOp_t op, int root, ncclComm_t comm, struct CUstream_st* stream) {
  return Forward(comm, "ncclReduce", datatype, [&](sieveDataType_t type) {
    return sieveReduce(sendbuff, recvbuff, count, type, ToSieveOp(op), root, SieveOf(comm), stream);
  });
}

ncclResult_t ncclAllGather(const void* sendbuff, void* recvbuff, size_t sendcount,
                           ncclDataType_t datatype, ncclComm_t comm, struct CUstream_st* stream) {
  return Forward(comm, "ncclAllGather", datatype, [&](sieveDataType_t type) {
    return sieveAllGather(sendbuff, recvbuff, sendcount, type, SieveOf(comm), stream);
  });
}

ncclResult_t ncclReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount,
                               ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                               struct CUstream_st* stream) {
  return Forward(comm, "ncclReduceScatter", datatype, [&](sieveDataType_t type) {
    return sieveReduceScatter(sendbuff, recvbuff, recvcount, type, ToSieveOp(op), SieveOf(comm),
                              stream);
  });
}

ncclResult_t ncclSend(const void* sendbuff, size_t count, ncclDataType_t datatype, int peer,
                      ncclComm_t comm, struct CUstream_st* stream) {
  return Forward(comm, "ncclSend", datatype, [&](sieveDataType_t type) {
    return sieveSend(sendbuff, count, type, peer, SieveOf(comm), stream);
  });
}

ncclResult_t ncclRecv(void* recvbuff, size_t count, ncclDataType_t datatype, int peer,
                      ncclComm_t comm, struct CUstream_st* stream) {
  return Forward(comm, "ncclRecv", datatype, [&](sieveDataType_t type) {
    return sieveRecv(recvbuff, count, type, peer, SieveOf(comm), stream);
  });
}

ncclResult_t ncclGroupStart(void) { return FromSieve(nullptr, sieveGroupStart()); }

ncclResult_t ncclGroupEnd(void) { return FromSieve(nullptr, sieveGroupEnd()); }

}  // extern "C"

SIEVE_NCCL_PROFILING_ALIAS(ncclAllReduce);
SIEVE_NCCL_PROFILING_ALIAS(ncclBroadcast);
SIEVE_NCCL_PROFILING_ALIAS(ncclBcast);
SIEVE_NCCL_PROFILING_ALIAS(ncclReduce);
SIEVE_NCCL_PROFILING_ALIAS(ncclAllGather);
SIEVE_NCCL_PROFILING_ALIAS(ncclReduceScatter);
SIEVE_NCCL_PROFILING_ALIAS(ncclSend);
SIEVE_NCCL_PROFILING_ALIAS(ncclRecv);
SIEVE_NCCL_PROFILING_ALIAS(ncclGroupStart);
SIEVE_NCCL_PROFILING_ALIAS(ncclGroupEnd);
