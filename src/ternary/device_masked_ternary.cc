// Masked + ternary on device buffers: pack, then the device ternary run on
// the packed vector, which scatters its result; all queued on the stream.
#include "ternary/device_masked_ternary.h"

#include "mask/device_masked.h"
#include "ternary/device_ternary.h"
#include "gpu/comm_engine.h"
#include "gpu/gpu_runtime.h"

namespace sieve::gpu {

Status EnqueueDeviceMaskedTernary(Comm& comm, const coll::TernaryArgs& args,
                                  std::shared_ptr<mask::MaskState> mask, DeviceResidual* residual,
                                  CUstream_st* stream) {
  const coll::CollArgs& b = args.base;
  ProgressEngine* engine = nullptr;  // checks the device before anything is queued
  SIEVE_RETURN_IF_ERROR(EngineFor(comm, {b.send, b.recv}, &engine));
  DeviceOps* ops = Runtime().ops;
  const size_t esize = kernels::DTypeSize(b.dtype);
  const size_t nnz = mask->idx.size();
  const uint32_t* d_idx = nullptr;
  const uint64_t* d_bits = nullptr;
  SIEVE_RETURN_IF_ERROR(DeviceMaskOf(*mask, stream, &d_idx, &d_bits));
  // The packed vector the run quantizes; its sums are dequantized straight
  // into recvbuff, scattered through the mask with zero-fill.
  void* packed = nullptr;
  SIEVE_RETURN_IF_ERROR(ops->AllocDevice(nnz * esize, stream, &packed));
  DeviceTernaryRun run;
  run.args = args;
  run.args.base.send = packed;
  run.args.base.count = nnz;
  run.scatter.idx = d_idx;
  run.scatter.bits = d_bits;
  run.scatter.count = b.count;
  run.residual = residual;
  run.name = "masked ternary allreduce";
  run.dense_bytes = b.count * esize;
  run.masked = true;
  // After a failed enqueue the stream was released and the outputs are
  // undefined, as for every device collective. The mask's device copy is
  // freed stream-ordered, so a deregistration right after this call is safe.
  Status st = ops->MaskedPack(esize, b.send, d_idx, nnz, packed, stream);
  if (st.ok()) st = EnqueueDeviceTernaryRun(comm, run, stream);
  Status freed = ops->FreeDevice(packed, stream);
  return st.ok() ? freed : st;
}

}  // namespace sieve::gpu
