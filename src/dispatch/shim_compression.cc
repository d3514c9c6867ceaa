// The mode table of SIEVE_NCCL_MODE (shim_compression.h).
#include "dispatch/shim_compression.h"

#include "ternary/quantized_allgather.h"
#include "ternary/quantized_reduce_scatter.h"

namespace sieve::dispatch {

namespace {

// Step numbers of the quantized calls issued for the shim, kept with the communicator.
struct ShimTernarySteps {
  uint64_t next = 0;
};

bool IsFloat(kernels::DType t) {
  using kernels::DType;
  return t == DType::kFloat32 || t == DType::kFloat16 || t == DType::kBfloat16;
}

bool SumOrAvg(kernels::RedOp op) {
  return op == kernels::RedOp::kSum || op == kernels::RedOp::kAvg;
}

}  // namespace

ShimCompression CompressionOf(const Comm& comm) {
  ShimCompression c;
  if (!comm.serving_nccl()) return c;
  switch (comm.config().nccl_mode) {
    case NcclMode::kDense:
      break;
    case NcclMode::kAutoMask:
      c.auto_mask = true;
      break;
    case NcclMode::kTernary:
      c.allreduce_levels = 1;
      break;
    case NcclMode::kAutoMaskTernary:
      c.auto_mask = true;
      c.allreduce_levels = 1;
      break;
    case NcclMode::kAuto:
      c.auto_levels = true;
      break;
    case NcclMode::kQ3:
      c.allreduce_levels = c.reduce_scatter_levels = 3;
      break;
    case NcclMode::kQ7:
      c.allreduce_levels = c.reduce_scatter_levels = 7;
      break;
    case NcclMode::kRsTernary:
      c.reduce_scatter_levels = 1;
      break;
    case NcclMode::kRsTernaryAg8:
      c.reduce_scatter_levels = 1;
      c.allgather_bits = 8;
      break;
    case NcclMode::kQ7Ag8:
      c.allreduce_levels = c.reduce_scatter_levels = 7;
      c.allgather_bits = 8;
      break;
  }
  return c;
}

uint64_t ShimNextStep(Comm& comm) { return comm.State<ShimTernarySteps>().next++; }

bool ShimQuantizes(const Comm& comm, algo::OpKind kind, const coll::CollArgs& a) {
  const ShimCompression mode = CompressionOf(comm);
  if (kind == algo::OpKind::kReduceScatter)
    return mode.reduce_scatter_levels > 0 && IsFloat(a.dtype) && SumOrAvg(a.op);
  if (kind == algo::OpKind::kAllGather) return mode.allgather_bits > 0 && IsFloat(a.dtype);
  return false;
}

Status ShimReduceScatter(Comm& comm, const coll::CollArgs& a) {
  if (!ShimQuantizes(comm, algo::OpKind::kReduceScatter, a)) return coll::ReduceScatter(comm, a);
  coll::TernaryArgs t;
  t.base = a;
  t.seed = comm.config().ternary_seed;
  t.step = ShimNextStep(comm);
  t.levels = CompressionOf(comm).reduce_scatter_levels;
  return coll::QuantizedReduceScatter(comm, t);
}

Status ShimAllGather(Comm& comm, const coll::CollArgs& a) {
  if (!ShimQuantizes(comm, algo::OpKind::kAllGather, a)) return coll::AllGather(comm, a);
  return ternary::QuantizedAllGather(comm, a, CompressionOf(comm).allgather_bits);
}

}  // namespace sieve::dispatch
