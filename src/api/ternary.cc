// sieveAllReduceTernary, sieveAllReduceQuantized (its L-level form, DESIGN.md
// 1.3a; L = 1 is the same call), sieveReduceScatterQuantized and
// sieveAllGatherQuantized: checks (floating dtypes, sum/avg, params, levels,
// bits), then the call described and submitted like any collective.
#include <memory>

#include "api/api_guard.h"
#include "api/arg_check.h"
#include "api/mask_handle.h"
#include "api/quantized_args.h"
#include "dispatch/dispatch.h"
#include "kernels/ternary.h"
#include "plan/compression_choice.h"
#include "ternary/auto_levels.h"
#include "ternary/quantized_allgather.h"
#include "ternary/ternary_mode.h"

static_assert(SIEVE_MAX_LEVELS == sieve::kernels::kMaxLevels, "one bound on levels");
static_assert(SIEVE_LEVELS_AUTO == sieve::ternary::kLevelsAuto, "one value asks for auto");
static_assert(SIEVE_LEVELS_DENSE == sieve::plan::kAutoDense, "one value says dense");

namespace {

using sieve::Status;

// Every entry point (`entry` and `name` in messages, `levels` already checked):
// the arguments checked, the call described and submitted. The reduce-scatter
// (kind kQuantizedReduceScatter) reads count * nranks elements of sendbuff and
// may run in place at recvbuff == sendbuff + rank * count.
Status Submit(const char* entry, const char* name, sieve::algo::OpKind kind,
              const void* sendbuff, void* recvbuff, size_t count, int datatype, int op,
              int levels, const sieveTernaryParams_t* params, sieveComm_t comm,
              sieveStream_t stream) {
  sieve::Comm* impl = nullptr;
  sieve::coll::CollArgs args;
  SIEVE_RETURN_IF_ERROR(sieve::CheckComm(comm, &impl));
  SIEVE_RETURN_IF_ERROR(sieve::CheckDataType(datatype, &args.dtype));
  SIEVE_RETURN_IF_ERROR(sieve::CheckRedOp(op, &args.op));
  SIEVE_RETURN_IF_ERROR(sieve::CheckFloatSumAvg(args.dtype, args.op, name));
  const bool scatter = kind == sieve::algo::OpKind::kQuantizedReduceScatter;
  const size_t blocks = scatter ? static_cast<size_t>(impl->size()) : 1;
  const size_t es = sieve::kernels::DTypeSize(args.dtype);
  SIEVE_RETURN_IF_ERROR(sieve::CheckByteSize(count, blocks, es, "count"));
  SIEVE_RETURN_IF_ERROR(sieve::CheckTernaryParams(params, count * blocks, name));
  SIEVE_RETURN_IF_ERROR(sieve::CheckBuffer(sendbuff, "sendbuff", count));
  SIEVE_RETURN_IF_ERROR(sieve::CheckBuffer(recvbuff, "recvbuff", count));
  // In place: sendbuff at recvbuff (the all-reduce), or recvbuff at our block.
  const size_t recv_at = scatter ? static_cast<size_t>(impl->rank()) * count * es : 0;
  SIEVE_RETURN_IF_ERROR(sieve::CheckOverlap(
      sendbuff, count * blocks * es, recvbuff, count * es,
      reinterpret_cast<uintptr_t>(recvbuff) - recv_at,
      scatter ? "recvbuff == sendbuff + rank * recvcount" : "sendbuff == recvbuff"));
  args.send = sendbuff;
  args.recv = recvbuff;
  args.count = count;
  auto mode = std::make_shared<sieve::ternary::TernaryParams>();
  mode->levels = levels;
  mode->seed = params->seed;
  mode->step = params->step;
  mode->block = params->block_size == 0 ? 2048 : params->block_size;
  mode->error_feedback = params->error_feedback != 0;
  mode->mask_handle = params->mask;
  if (params->mask != nullptr)
    SIEVE_RETURN_IF_ERROR(sieve::CheckMaskUse(params->mask, impl, count * blocks, &mode->mask));
  return sieve::dispatch::SubmitCollective(impl, entry, kind, args, std::move(mode), stream);
}

}  // namespace

extern "C" {

sieveResult_t sieveAllReduceTernary(const void* sendbuff, void* recvbuff, size_t count,
                                    sieveDataType_t datatype, sieveRedOp_t op,
                                    const sieveTernaryParams_t* params, sieveComm_t comm,
                                    sieveStream_t stream) {
  return sieve::Guard(sieve::IdleImpl(comm), "sieveAllReduceTernary", [&]() -> Status {
    return Submit("sieveAllReduceTernary", "the ternary all-reduce",
                  sieve::algo::OpKind::kTernaryAllReduce, sendbuff, recvbuff, count,
                  sieve::EnumValue(datatype), sieve::EnumValue(op), 1, params, comm, stream);
  });
}

sieveResult_t sieveAllReduceQuantized(const void* sendbuff, void* recvbuff, size_t count,
                                      sieveDataType_t datatype, sieveRedOp_t op, int levels,
                                      const sieveTernaryParams_t* params, sieveComm_t comm,
                                      sieveStream_t stream) {
  return sieve::Guard(sieve::IdleImpl(comm), "sieveAllReduceQuantized", [&]() -> Status {
    if ((levels < 1 || levels > sieve::kernels::kMaxLevels) && levels != SIEVE_LEVELS_AUTO)
      return Status::InvalidArgument(sieve::StrFormat(
          "levels %d is out of range (1..%d; 1 is ternary; SIEVE_LEVELS_AUTO (%d) chooses)",
          levels, sieve::kernels::kMaxLevels, SIEVE_LEVELS_AUTO));
    return Submit("sieveAllReduceQuantized", "the quantized all-reduce",
                  sieve::algo::OpKind::kTernaryAllReduce, sendbuff, recvbuff, count,
                  sieve::EnumValue(datatype), sieve::EnumValue(op), levels, params, comm, stream);
  });
}

sieveResult_t sieveReduceScatterQuantized(const void* sendbuff, void* recvbuff, size_t recvcount,
                                          sieveDataType_t datatype, sieveRedOp_t op, int levels,
                                          const sieveTernaryParams_t* params, sieveComm_t comm,
                                          sieveStream_t stream) {
  return sieve::Guard(sieve::IdleImpl(comm), "sieveReduceScatterQuantized", [&]() -> Status {
    SIEVE_RETURN_IF_ERROR(sieve::CheckLevels(levels));
    return Submit("sieveReduceScatterQuantized", "the quantized reduce-scatter",
                  sieve::algo::OpKind::kQuantizedReduceScatter, sendbuff, recvbuff, recvcount,
                  sieve::EnumValue(datatype), sieve::EnumValue(op), levels, params, comm, stream);
  });
}

sieveResult_t sieveAllGatherQuantized(const void* sendbuff, void* recvbuff, size_t sendcount,
                                      sieveDataType_t datatype, int bits, sieveComm_t comm,
                                      sieveStream_t stream) {
  return sieve::Guard(sieve::IdleImpl(comm), "sieveAllGatherQuantized", [&]() -> Status {
    sieve::Comm* impl = nullptr;
    sieve::coll::CollArgs args;
    SIEVE_RETURN_IF_ERROR(sieve::CheckComm(comm, &impl));
    SIEVE_RETURN_IF_ERROR(sieve::CheckDataType(sieve::EnumValue(datatype), &args.dtype));
    SIEVE_RETURN_IF_ERROR(
        sieve::CheckFloatSumAvg(args.dtype, sieve::kernels::RedOp::kSum, "the quantized all-gather"));
    if (bits != 8 && bits != 4)
      return Status::InvalidArgument(
          sieve::StrFormat("bits %d is not supported by the quantized all-gather (8, 4)", bits));
    const size_t n = static_cast<size_t>(impl->size()), r = static_cast<size_t>(impl->rank());
    const size_t es = sieve::kernels::DTypeSize(args.dtype);
    SIEVE_RETURN_IF_ERROR(sieve::CheckByteSize(sendcount, n, es, "sendcount"));
    SIEVE_RETURN_IF_ERROR(sieve::CheckBuffer(sendbuff, "sendbuff", sendcount));
    SIEVE_RETURN_IF_ERROR(sieve::CheckBuffer(recvbuff, "recvbuff", sendcount));
    // In place: sendbuff is this rank's block of recvbuff.
    SIEVE_RETURN_IF_ERROR(sieve::CheckOverlap(
        sendbuff, sendcount * es, recvbuff, sendcount * n * es,
        reinterpret_cast<uintptr_t>(recvbuff) + r * sendcount * es,
        "sendbuff == recvbuff + rank * sendcount"));
    args.send = sendbuff;
    args.recv = recvbuff;
    args.count = sendcount;
    auto mode = std::make_shared<sieve::ternary::QuantizedGatherParams>();
    mode->bits = bits;
    return sieve::dispatch::SubmitCollective(impl, "sieveAllGatherQuantized",
                                             sieve::algo::OpKind::kQuantizedAllGather, args,
                                             std::move(mode), stream);
  });
}

sieveResult_t sieveCommGetAutoLevels(sieveComm_t comm, int* levels) {
  return sieve::Guard(sieve::IdleImpl(comm), "sieveCommGetAutoLevels", [&]() -> Status {
    sieve::Comm* impl = nullptr;
    SIEVE_RETURN_IF_ERROR(sieve::CheckComm(comm, &impl));
    if (levels == nullptr) return Status::InvalidArgument("levels is NULL");
    *levels = sieve::ternary::LastAutoLevels(*impl);
    return Status::OK();
  });
}

}  // extern "C"
