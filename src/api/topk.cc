// sieveAllReduceTopK: checks (floating dtypes, sum/avg, fraction, count), then
// the call described and submitted like any collective (topk/topk_mode.h).
#include <cmath>
#include <memory>

#include "api/api_guard.h"
#include "api/arg_check.h"
#include "dispatch/dispatch.h"
#include "topk/topk_codec.h"
#include "topk/topk_mode.h"

namespace {

using sieve::Status;

Status Submit(const void* sendbuff, void* recvbuff, size_t count, int datatype, int op,
              double fraction, int error_feedback, sieveComm_t comm, sieveStream_t stream) {
  sieve::Comm* impl = nullptr;
  sieve::coll::CollArgs args;
  SIEVE_RETURN_IF_ERROR(sieve::CheckComm(comm, &impl));
  SIEVE_RETURN_IF_ERROR(sieve::CheckDataType(datatype, &args.dtype));
  SIEVE_RETURN_IF_ERROR(sieve::CheckRedOp(op, &args.op));
  SIEVE_RETURN_IF_ERROR(sieve::CheckFloatSumAvg(args.dtype, args.op, "the top-k all-reduce"));
  if (!(fraction > 0.0 && fraction <= 1.0))  // NaN fails too
    return Status::InvalidArgument(
        sieve::StrFormat("fraction %g is out of range (0 < fraction <= 1)", fraction));
  if (error_feedback != 0 && error_feedback != 1)
    return Status::InvalidArgument(
        sieve::StrFormat("error_feedback %d is not 0 or 1", error_feedback));
  if (count > sieve::topk::kMaxCount)
    return Status::InvalidArgument(sieve::StrFormat(
        "count %zu exceeds the limit of the top-k all-reduce, 2^32 elements", count));
  SIEVE_RETURN_IF_ERROR(sieve::CheckBuffer(sendbuff, "sendbuff", count));
  SIEVE_RETURN_IF_ERROR(sieve::CheckBuffer(recvbuff, "recvbuff", count));
  const size_t bytes = count * sieve::kernels::DTypeSize(args.dtype);
  SIEVE_RETURN_IF_ERROR(sieve::CheckOverlap(sendbuff, bytes, recvbuff, bytes,
                                            reinterpret_cast<uintptr_t>(recvbuff),
                                            "sendbuff == recvbuff"));
  args.send = sendbuff;
  args.recv = recvbuff;
  args.count = count;
  auto mode = std::make_shared<sieve::topk::TopkParams>();
  mode->fraction = fraction;
  mode->error_feedback = error_feedback == 1;
  return sieve::dispatch::SubmitCollective(impl, "sieveAllReduceTopK",
                                           sieve::algo::OpKind::kTopkAllReduce, args,
                                           std::move(mode), stream);
}

}  // namespace

extern "C" {

sieveResult_t sieveAllReduceTopK(const void* sendbuff, void* recvbuff, size_t count,
                                 sieveDataType_t datatype, sieveRedOp_t op, double fraction,
                                 int error_feedback, sieveComm_t comm, sieveStream_t stream) {
  return sieve::Guard(sieve::IdleImpl(comm), "sieveAllReduceTopK", [&]() -> Status {
    return Submit(sendbuff, recvbuff, count, sieve::EnumValue(datatype), sieve::EnumValue(op),
                  fraction, error_feedback, comm, stream);
  });
}

}  // extern "C"
