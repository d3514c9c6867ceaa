// The collectives Sieve has no schedule for (AlltoAll, Gather, Scatter), built as one group of
// sieveSend/sieveRecv calls, so every transfer is posted at once and none can deadlock.
#include "shim_internal.h"

using sieve_nccl::CallScope;
using sieve_nccl::Fail;
using sieve_nccl::FromSieve;
using sieve_nccl::SieveOf;

namespace {

// One collective's transfers: the ranks and element size, and the first error of the group.
class Exchange {
 public:
  Exchange(ncclComm_t comm, const char* call) : comm_(comm), call_(call) {}

  // Checks the arguments every one of these collectives shares; transfers go on `stream`.
  ncclResult_t Prepare(ncclDataType_t datatype, size_t count, struct CUstream_st* stream) {
    stream_ = stream;
    ncclResult_t r = sieve_nccl::ToSieveType(comm_, call_, datatype, &type_);
    if (r != ncclSuccess) return r;
    sieveComm_t sieve = SieveOf(comm_);
    r = FromSieve(comm_, sieveCommCount(sieve, &nranks_));
    if (r == ncclSuccess) r = FromSieve(comm_, sieveCommUserRank(sieve, &rank_));
    if (r != ncclSuccess) return r;
    esize_ = sieve_nccl::TypeSize(type_);
    if (esize_ == 0) return Fail(comm_, ncclInvalidArgument, call_, "unknown datatype");
    if (count > SIZE_MAX / esize_ / static_cast<size_t>(nranks_))
      return Fail(comm_, ncclInvalidArgument, call_, "count * nranks overflows");
    count_ = count;
    return ncclSuccess;
  }
  // Prepare, and root must be a rank of comm (Gather, Scatter).
  ncclResult_t PrepareRooted(ncclDataType_t datatype, size_t count, int root,
                             struct CUstream_st* stream) {
    ncclResult_t r = Prepare(datatype, count, stream);
    if (r != ncclSuccess) return r;
    if (root < 0 || root >= nranks_)
      return Fail(comm_, ncclInvalidArgument, call_, "root is not a rank of comm");
    return ncclSuccess;
  }

  int rank() const { return rank_; }
  int nranks() const { return nranks_; }
  // Byte offset of block `index` of count elements.
  size_t Offset(int index) const { return static_cast<size_t>(index) * count_ * esize_; }

  void Send(const void* buffer, int peer) {
    Keep(sieveSend(buffer, count_, type_, peer, SieveOf(comm_), stream_));
  }
  void Recv(void* buffer, int peer) {
    Keep(sieveRecv(buffer, count_, type_, peer, SieveOf(comm_), stream_));
  }

  // Opens the group; Finish closes it (always, so the caller's group depth stays balanced).
  void Start() { Keep(sieveGroupStart()); }
  ncclResult_t Finish() {
    Keep(sieveGroupEnd());
    return FromSieve(comm_, first_);
  }

 private:
  void Keep(sieveResult_t r) {
    if (first_ == sieveSuccess) first_ = r;
  }

  ncclComm_t comm_;
  const char* call_;
  sieveDataType_t type_ = sieveInt8;
  struct CUstream_st* stream_ = nullptr;
  size_t count_ = 0;
  size_t esize_ = 0;
  int rank_ = 0;
  int nranks_ = 1;
  sieveResult_t first_ = sieveSuccess;
};

}  // namespace

extern "C" {

// Block j of sendbuff goes to rank j; block i of recvbuff comes from rank i.
ncclResult_t ncclAlltoAll(const void* sendbuff, void* recvbuff, size_t count,
                          ncclDataType_t datatype, ncclComm_t comm, struct CUstream_st* stream) {
  CallScope scope(comm);
  Exchange x(comm, "ncclAlltoAll");
  ncclResult_t r = x.Prepare(datatype, count, stream);
  if (r != ncclSuccess) return r;
  const char* send = static_cast<const char*>(sendbuff);
  char* recv = static_cast<char*>(recvbuff);
  x.Start();
  for (int peer = 0; peer < x.nranks(); ++peer) {
    x.Send(send + x.Offset(peer), peer);
    x.Recv(recv + x.Offset(peer), peer);
  }
  return x.Finish();
}

// Every rank's sendbuff lands in block r of the root's recvbuff.
ncclResult_t ncclGather(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                        int root, ncclComm_t comm, struct CUstream_st* stream) {
  CallScope scope(comm);
  Exchange x(comm, "ncclGather");
  ncclResult_t r = x.PrepareRooted(datatype, count, root, stream);
  if (r != ncclSuccess) return r;
  char* recv = static_cast<char*>(recvbuff);
  bool in_place = x.rank() == root && sendbuff == recv + x.Offset(root);
  x.Start();
  if (!in_place) x.Send(sendbuff, root);
  if (x.rank() == root) {
    for (int peer = 0; peer < x.nranks(); ++peer)
      if (peer != root || !in_place) x.Recv(recv + x.Offset(peer), peer);
  }
  return x.Finish();
}

// Block r of the root's sendbuff lands in rank r's recvbuff.
ncclResult_t ncclScatter(const void* sendbuff, void* recvbuff, size_t count,
                         ncclDataType_t datatype, int root, ncclComm_t comm,
                         struct CUstream_st* stream) {
  CallScope scope(comm);
  Exchange x(comm, "ncclScatter");
  ncclResult_t r = x.PrepareRooted(datatype, count, root, stream);
  if (r != ncclSuccess) return r;
  const char* send = static_cast<const char*>(sendbuff);
  bool in_place = x.rank() == root && recvbuff == send + x.Offset(root);
  x.Start();
  if (x.rank() == root) {
    for (int peer = 0; peer < x.nranks(); ++peer)
      if (peer != root || !in_place) x.Send(send + x.Offset(peer), peer);
  }
  if (!in_place) x.Recv(recvbuff, root);
  return x.Finish();
}

}  // extern "C"

SIEVE_NCCL_PROFILING_ALIAS(ncclAlltoAll);
SIEVE_NCCL_PROFILING_ALIAS(ncclGather);
SIEVE_NCCL_PROFILING_ALIAS(ncclScatter);
