// Subnet layout entry points (SDP, D2FT): layout handles (values looked up in a
// table of live handles, so a stale or foreign one is reported, never
// dereferenced), the three collective ways to register one, and the two
// all-reduces (dense, or quantized at L levels) described and submitted like
// any collective.
#include <memory>
#include <vector>

#include "api/api_guard.h"
#include "api/arg_check.h"
#include "api/live_handles.h"
#include "api/mask_handle.h"
#include "api/quantized_args.h"
#include "comm/group.h"
#include "dispatch/dispatch.h"
#include "kernels/coverage_average.h"
#include "subnet/subnet_allreduce.h"
#include "subnet/subnet_mode.h"

namespace {

using sieve::Status;
using sieve::StrFormat;
using sieve::subnet::LayoutState;
using sieve::subnet::SegmentSpec;
using sieve::subnet::SubnetParams;

using Layouts = sieve::LiveHandles<sieveLayout, LayoutState>;

Layouts& LiveLayouts() {
  static auto* live = new Layouts(
      "layout", "layout is not a registered layout (deregistered, never registered, or corrupted)",
      0x5c4c);  // outlives static dtors
  return *live;
}

// What registration needs before any data is read: a usable comm, an output
// handle, no open group.
Status CheckRegister(sieveComm_t comm, sieveLayout_t* layout, const char* call,
                     sieve::Comm** impl) {
  SIEVE_RETURN_IF_ERROR(sieve::CheckComm(comm, impl));
  if (layout == nullptr) return Status::InvalidArgument("layout is NULL");
  if (sieve::InGroup())
    return Status::InvalidUsage(StrFormat("%s cannot be called inside a group", call));
  return Status::OK();
}

// Registers collectively (`local` carries this rank's own check result) and
// hands out a live handle.
Status Publish(sieve::Comm* impl, size_t count, std::vector<SegmentSpec> segments, Status local,
               sieveLayout_t* layout) {
  std::shared_ptr<LayoutState> state;
  // After any device work queued on the communicator (one order per communicator).
  SIEVE_RETURN_IF_ERROR(impl->RunInOrder([&] {
    return sieve::subnet::Register(*impl, count, std::move(segments), std::move(local), &state);
  }));
  *layout = LiveLayouts().Publish(std::move(state));
  return Status::OK();
}

// Copies the caller's segments; a NULL holders pointer or a holder count
// outside 1..nranks is reported (holders are not read then).
Status CopySegments(const sieveSegment_t* segments, int nsegments, int nranks,
                    std::vector<SegmentSpec>* out) {
  if (nsegments < 1) return Status::InvalidArgument(StrFormat("nsegments %d < 1", nsegments));
  if (segments == nullptr) return Status::InvalidArgument("segments is NULL");
  SIEVE_RETURN_IF_ERROR(sieve::subnet::CheckLayoutSize(static_cast<size_t>(nsegments), 0));
  out->resize(static_cast<size_t>(nsegments));
  size_t holder_entries = 0;
  for (int k = 0; k < nsegments; ++k) {
    const sieveSegment_t& s = segments[k];
    if (s.nholders < 1 || s.nholders > nranks)
      return Status::InvalidArgument(
          StrFormat("segment %d has nholders %d; it needs 1..%d", k, s.nholders, nranks));
    if (s.holders == nullptr)
      return Status::InvalidArgument(StrFormat("segment %d: holders is NULL", k));
    holder_entries += static_cast<size_t>(s.nholders);
    SIEVE_RETURN_IF_ERROR(sieve::subnet::CheckLayoutSize(static_cast<size_t>(nsegments),
                                                         holder_entries));
    (*out)[k].offset = s.offset;
    (*out)[k].length = s.length;
    (*out)[k].holders.assign(s.holders, s.holders + s.nholders);
  }
  return Status::OK();
}

// Checks shared by both all-reduces; writes the call (its layout in `params`). `datatype` is
// the caller's raw value (sieve::EnumValue): any int, so it is never loaded as the enum.
Status CheckSubnetCall(sieveComm_t comm, const void* sendbuff, void* recvbuff, size_t count,
                       int datatype, sieveLayout_t layout, const char* call,
                       sieve::Comm** impl, sieve::coll::Call* out, SubnetParams* params) {
  sieve::coll::CollArgs* args = &out->args;
  std::shared_ptr<LayoutState>* state = &params->layout;
  SIEVE_RETURN_IF_ERROR(sieve::CheckComm(comm, impl));
  SIEVE_RETURN_IF_ERROR(sieve::CheckDataType(datatype, &args->dtype));
  if (!sieve::kernels::SupportsCoverageAverage(args->dtype))
    return Status::InvalidArgument(
        StrFormat("datatype %s is not supported by %s (float32, float16, bfloat16, float64)",
                  sieve::kernels::DTypeName(args->dtype), call));
  SIEVE_RETURN_IF_ERROR(LiveLayouts().Lookup(layout, state));
  SIEVE_RETURN_IF_ERROR(
      sieve::CheckRegisteredFor("layout", (*state)->comm_serial, (*state)->count, *impl, count));
  SIEVE_RETURN_IF_ERROR(
      sieve::CheckByteSize(count, 1, sieve::kernels::DTypeSize(args->dtype), "count"));
  SIEVE_RETURN_IF_ERROR(sieve::CheckBuffer(sendbuff, "sendbuff", count));
  SIEVE_RETURN_IF_ERROR(sieve::CheckBuffer(recvbuff, "recvbuff", count));
  const size_t bytes = count * sieve::kernels::DTypeSize(args->dtype);
  SIEVE_RETURN_IF_ERROR(sieve::CheckOverlap(sendbuff, bytes, recvbuff, bytes,
                                            reinterpret_cast<uintptr_t>(recvbuff),
                                            "sendbuff == recvbuff"));
  args->send = sendbuff;
  args->recv = recvbuff;
  args->count = count;
  out->entry = call;
  return Status::OK();
}

// The quantized calls' own checks (`levels` checked already): float32, float16 or
// bfloat16; valid params (a mask, if any, registered on this communicator for
// count); every element's position fits the 32-bit gather list of a group
// (quantized_group_codec.h).
Status CheckQuantized(const sieve::Comm* impl, const sieve::coll::CollArgs& args, int levels,
                      const sieveTernaryParams_t* params, const char* call, SubnetParams* out) {
  SIEVE_RETURN_IF_ERROR(sieve::CheckFloatSumAvg(args.dtype, sieve::kernels::RedOp::kAvg, call));
  SIEVE_RETURN_IF_ERROR(sieve::CheckTernaryParams(params, args.count, call));
  if (args.count > UINT32_MAX)
    return Status::InvalidArgument(
        StrFormat("count %zu exceeds the limit of %s, 2^32 - 1 elements", args.count, call));
  if (params->mask != nullptr)
    SIEVE_RETURN_IF_ERROR(sieve::CheckMaskUse(params->mask, impl, args.count, &out->mask));
  out->quant.levels = levels;
  out->quant.seed = params->seed;
  out->quant.step = params->step;
  out->quant.block = params->block_size == 0 ? 2048 : params->block_size;
  out->error_feedback = params->error_feedback != 0;
  return Status::OK();
}

// D2FT's bitmaps as the caller passed them (sieveAllReduceD2ft's touched, schedule).
struct D2ftBitmaps {
  const unsigned char* touched;
  const unsigned char* schedule;
};

// Copies them into the call: a grouped call runs after the caller may have reused them.
Status CopyBitmaps(const D2ftBitmaps& d2ft, const LayoutState& state, const sieve::Comm& impl,
                   SubnetParams* params) {
  const size_t row = (static_cast<size_t>(state.num_segments()) + 7) / 8;
  if (d2ft.schedule != nullptr) {
    params->schedule.assign(d2ft.schedule, d2ft.schedule + row * static_cast<size_t>(impl.size()));
    if (d2ft.touched != nullptr) {
      const unsigned char* own = d2ft.schedule + row * static_cast<size_t>(impl.rank());
      for (int k = 0; k < state.num_segments(); ++k)
        if (((d2ft.touched[k / 8] ^ own[k / 8]) >> (k % 8)) & 1u)
          return Status::InvalidArgument(StrFormat(
              "touched differs from this rank's row of schedule at segment %d (pass touched "
              "NULL with a schedule, or this rank's row)",
              k));
    }
  } else if (d2ft.touched == nullptr) {
    return Status::InvalidArgument("touched and schedule are both NULL");
  } else {
    params->touched.assign(d2ft.touched, d2ft.touched + row);
  }
  return Status::OK();
}

// Every subnet entry point: SDP (d2ft null) or D2FT, dense (levels 0) or quantized.
Status SubmitSubnet(const void* sendbuff, void* recvbuff, size_t count, int datatype,
                    sieveLayout_t layout, const D2ftBitmaps* d2ft, int levels,
                    const sieveTernaryParams_t* params, sieveComm_t comm, sieveStream_t stream,
                    const char* entry) {
  sieve::Comm* impl = nullptr;
  sieve::coll::Call call;
  auto p = std::make_shared<SubnetParams>();
  SIEVE_RETURN_IF_ERROR(CheckSubnetCall(comm, sendbuff, recvbuff, count, datatype, layout, entry,
                                        &impl, &call, p.get()));
  if (levels > 0) SIEVE_RETURN_IF_ERROR(CheckQuantized(impl, call.args, levels, params, entry, p.get()));
  if (d2ft != nullptr) SIEVE_RETURN_IF_ERROR(CopyBitmaps(*d2ft, *p->layout, *impl, p.get()));
  return sieve::dispatch::SubmitCollective(impl, entry,
                                           d2ft != nullptr ? sieve::algo::OpKind::kD2ftAllReduce
                                                           : sieve::algo::OpKind::kSubnetAllReduce,
                                           call.args, std::move(p), stream);
}

}  // namespace

extern "C" {

sieveResult_t sieveLayoutRegister(sieveComm_t comm, size_t count, const sieveSegment_t* segments,
                                  int nsegments, sieveLayout_t* layout) {
  return sieve::Guard(sieve::IdleImpl(comm), "sieveLayoutRegister", [&]() -> Status {
    sieve::Comm* impl = nullptr;
    SIEVE_RETURN_IF_ERROR(CheckRegister(comm, layout, "sieveLayoutRegister", &impl));
    std::vector<SegmentSpec> specs;
    Status local = CopySegments(segments, nsegments, impl->size(), &specs);
    return Publish(impl, count, std::move(specs), std::move(local), layout);
  });
}

sieveResult_t sieveLayoutFromMaskMatrix(sieveComm_t comm, const unsigned char* matrix,
                                        size_t nblocks, size_t block_size, size_t count,
                                        sieveLayout_t* layout) {
  return sieve::Guard(sieve::IdleImpl(comm), "sieveLayoutFromMaskMatrix", [&]() -> Status {
    sieve::Comm* impl = nullptr;
    SIEVE_RETURN_IF_ERROR(CheckRegister(comm, layout, "sieveLayoutFromMaskMatrix", &impl));
    std::vector<SegmentSpec> specs;
    Status local = matrix == nullptr
                       ? Status::InvalidArgument("matrix is NULL")
                       : sieve::subnet::SegmentsFromMaskMatrix(matrix, impl->size(), nblocks,
                                                               block_size, count, &specs);
    return Publish(impl, count, std::move(specs), std::move(local), layout);
  });
}

sieveResult_t sieveLayoutEqualSubnets(sieveComm_t comm, size_t count, int nsubnets,
                                      sieveLayout_t* layout) {
  return sieve::Guard(sieve::IdleImpl(comm), "sieveLayoutEqualSubnets", [&]() -> Status {
    sieve::Comm* impl = nullptr;
    SIEVE_RETURN_IF_ERROR(CheckRegister(comm, layout, "sieveLayoutEqualSubnets", &impl));
    std::vector<SegmentSpec> specs;
    Status local = sieve::subnet::EqualSubnetSegments(count, nsubnets, impl->size(), &specs);
    return Publish(impl, count, std::move(specs), std::move(local), layout);
  });
}

sieveResult_t sieveLayoutNumSegments(sieveLayout_t layout, int* nsegments) {
  return sieve::Guard(nullptr, "sieveLayoutNumSegments", [&]() -> Status {
    if (nsegments == nullptr) return Status::InvalidArgument("nsegments is NULL");
    std::shared_ptr<LayoutState> state;
    SIEVE_RETURN_IF_ERROR(LiveLayouts().Lookup(layout, &state));
    *nsegments = state->num_segments();
    return Status::OK();
  });
}

sieveResult_t sieveLayoutDeregister(sieveLayout_t layout) {
  return sieve::Guard(nullptr, "sieveLayoutDeregister",
                      [&]() -> Status { return LiveLayouts().Remove(layout); });
}

sieveResult_t sieveAllReduceSubnet(const void* sendbuff, void* recvbuff, size_t count,
                                   sieveDataType_t datatype, sieveLayout_t layout, sieveComm_t comm,
                                   sieveStream_t stream) {
  return sieve::Guard(sieve::IdleImpl(comm), "sieveAllReduceSubnet", [&]() -> Status {
    return SubmitSubnet(sendbuff, recvbuff, count, sieve::EnumValue(datatype), layout, nullptr,
                        0, nullptr, comm, stream, "sieveAllReduceSubnet");
  });
}

sieveResult_t sieveAllReduceD2ft(const void* sendbuff, void* recvbuff, size_t count,
                                 sieveDataType_t datatype, sieveLayout_t layout,
                                 const unsigned char* touched, const unsigned char* schedule,
                                 sieveComm_t comm, sieveStream_t stream) {
  return sieve::Guard(sieve::IdleImpl(comm), "sieveAllReduceD2ft", [&]() -> Status {
    D2ftBitmaps d2ft = {touched, schedule};
    return SubmitSubnet(sendbuff, recvbuff, count, sieve::EnumValue(datatype), layout, &d2ft, 0,
                        nullptr, comm, stream, "sieveAllReduceD2ft");
  });
}

sieveResult_t sieveAllReduceSubnetQuantized(const void* sendbuff, void* recvbuff, size_t count,
                                            sieveDataType_t datatype, sieveLayout_t layout,
                                            int levels, const sieveTernaryParams_t* params,
                                            sieveComm_t comm, sieveStream_t stream) {
  return sieve::Guard(sieve::IdleImpl(comm), "sieveAllReduceSubnetQuantized", [&]() -> Status {
    SIEVE_RETURN_IF_ERROR(sieve::CheckLevels(levels));
    return SubmitSubnet(sendbuff, recvbuff, count, sieve::EnumValue(datatype), layout, nullptr,
                        levels, params, comm, stream, "sieveAllReduceSubnetQuantized");
  });
}

sieveResult_t sieveAllReduceD2ftQuantized(const void* sendbuff, void* recvbuff, size_t count,
                                          sieveDataType_t datatype, sieveLayout_t layout,
                                          const unsigned char* touched,
                                          const unsigned char* schedule, int levels,
                                          const sieveTernaryParams_t* params, sieveComm_t comm,
                                          sieveStream_t stream) {
  return sieve::Guard(sieve::IdleImpl(comm), "sieveAllReduceD2ftQuantized", [&]() -> Status {
    SIEVE_RETURN_IF_ERROR(sieve::CheckLevels(levels));
    D2ftBitmaps d2ft = {touched, schedule};
    return SubmitSubnet(sendbuff, recvbuff, count, sieve::EnumValue(datatype), layout, &d2ft,
                        levels, params, comm, stream, "sieveAllReduceD2ftQuantized");
  });
}

}  // extern "C"
