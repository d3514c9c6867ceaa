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

}  // namespace

extern "C" {

ncclResult_t ncclAllReduce(const void* sendbuff, void* recvbuff, size_t count,
                           ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                           struct CUstream_st* stream) {
  CallScope scope(comm);
  sieveDataType_t type;
  ncclResult_t r = ToSieveType(comm, "ncclAllReduce", datatype, &type);
  if (r != ncclSuccess) return r;
  return FromSieve(
      comm, sieveAllReduce(sendbuff, recvbuff, count, type, ToSieveOp(op), SieveOf(comm), stream));
}

ncclResult_t ncclBroadcast(const void* sendbuff, void* recvbuff, size_t count,
                           ncclDataType_t datatype, int root, ncclComm_t comm,
                           struct CUstream_st* stream) {
  CallScope scope(comm);
  sieveDataType_t type;
  ncclResult_t r = ToSieveType(comm, "ncclBroadcast", datatype, &type);
  if (r != ncclSuccess) return r;
  return FromSieve(comm,
                   sieveBroadcast(sendbuff, recvbuff, count, type, root, SieveOf(comm), stream));
}

// The deprecated in-place broadcast.
ncclResult_t ncclBcast(void* buff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm,
                       struct CUstream_st* stream) {
  return ncclBroadcast(buff, buff, count, datatype, root, comm, stream);
}

ncclResult_t ncclReduce(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                        ncclRedOp_t op, int root, ncclComm_t comm, struct CUstream_st* stream) {
  CallScope scope(comm);
  sieveDataType_t type;
  ncclResult_t r = ToSieveType(comm, "ncclReduce", datatype, &type);
  if (r != ncclSuccess) return r;
  return FromSieve(comm, sieveReduce(sendbuff, recvbuff, count, type, ToSieveOp(op), root,
                                     SieveOf(comm), stream));
}

ncclResult_t ncclAllGather(const void* sendbuff, void* recvbuff, size_t sendcount,
                           ncclDataType_t datatype, ncclComm_t comm, struct CUstream_st* stream) {
  CallScope scope(comm);
  sieveDataType_t type;
  ncclResult_t r = ToSieveType(comm, "ncclAllGather", datatype, &type);
  if (r != ncclSuccess) return r;
  return FromSieve(comm,
                   sieveAllGather(sendbuff, recvbuff, sendcount, type, SieveOf(comm), stream));
}

ncclResult_t ncclReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount,
                               ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                               struct CUstream_st* stream) {
  CallScope scope(comm);
  sieveDataType_t type;
  ncclResult_t r = ToSieveType(comm, "ncclReduceScatter", datatype, &type);
  if (r != ncclSuccess) return r;
  return FromSieve(comm, sieveReduceScatter(sendbuff, recvbuff, recvcount, type, ToSieveOp(op),
                                            SieveOf(comm), stream));
}

ncclResult_t ncclSend(const void* sendbuff, size_t count, ncclDataType_t datatype, int peer,
                      ncclComm_t comm, struct CUstream_st* stream) {
  CallScope scope(comm);
  sieveDataType_t type;
  ncclResult_t r = ToSieveType(comm, "ncclSend", datatype, &type);
  if (r != ncclSuccess) return r;
  return FromSieve(comm, sieveSend(sendbuff, count, type, peer, SieveOf(comm), stream));
}

ncclResult_t ncclRecv(void* recvbuff, size_t count, ncclDataType_t datatype, int peer,
                      ncclComm_t comm, struct CUstream_st* stream) {
  CallScope scope(comm);
  sieveDataType_t type;
  ncclResult_t r = ToSieveType(comm, "ncclRecv", datatype, &type);
  if (r != ncclSuccess) return r;
  return FromSieve(comm, sieveRecv(recvbuff, count, type, peer, SieveOf(comm), stream));
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
