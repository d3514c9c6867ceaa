// The quantized reduce-scatter of device buffers: device_ternary.h's pipeline
// with the reduce-scatter's host half.
#include "ternary/device_reduce_scatter.h"

#include <memory>

#include "ternary/device_ternary.h"
#include "ternary/quantized_reduce_scatter.h"

namespace sieve::gpu {

namespace {

// Op 1 opens the call and agrees on the scales of the whole sendbuff; op 2 runs
// the host path's ring from the codes and packs this rank's chunk's sums.
class ReduceScatterHalf : public QuantizedHostHalf {
 public:
  ReduceScatterHalf(Comm& comm, const coll::TernaryArgs& args, size_t lead)
      : comm_(comm), args_(args), lead_(lead) {}
  Status AgreeScales(float* scales, size_t nblocks) override {
    return coll::QuantizedReduceScatterAgreeScales(comm_, args_, scales, nblocks, &call_);
  }
  Status Exchange(const float* scales, const void* wire, void* sums) override {
    Status st = coll::QuantizedReduceScatterFromCodes(comm_, call_.get(), scales, wire, lead_, sums);
    call_.reset();  // the call is over
    return st;
  }

 private:
  Comm& comm_;
  const coll::TernaryArgs args_;
  const size_t lead_;
  std::shared_ptr<coll::QuantizedReduceScatterCall> call_;  // opened by op 1
};

}  // namespace

Status EnqueueDeviceQuantizedReduceScatter(Comm& comm, const coll::TernaryArgs& args,
                                           DeviceResidual* residual, CUstream_st* stream) {
  const size_t count = args.base.count, total = count * static_cast<size_t>(comm.size());
  const size_t first = count * static_cast<size_t>(comm.rank());
  const size_t lead = first % args.block;  // back to the block boundary
  DeviceTernaryRun run;
  run.args = args;
  run.args.base.count = total;  // the vector quantized: the whole sendbuff
  run.residual = residual;
  run.host = std::make_shared<ReduceScatterHalf>(comm, args, lead);
  run.out_first = first - lead;
  run.out_count = lead + count;
  run.out_skip = lead;
  run.name = "quantized reduce-scatter";
  run.scales_name = "quantized reduce-scatter (scales)";
  run.dense_bytes = total * kernels::DTypeSize(args.base.dtype);
  return EnqueueDeviceTernaryRun(comm, run, stream);
}

}  // namespace sieve::gpu
