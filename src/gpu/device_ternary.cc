// Dense ternary all-reduce on device buffers: abs-max, quantize and dequantize
// kernels on the stream; scales, wire and final sums staged through the
// progress engine.
#include "gpu/device_ternary.h"

#include <memory>
#include <vector>

#include "core/log.h"
#include "gpu/comm_engine.h"
#include "gpu/gpu_runtime.h"
#include "kernels/ternary.h"

namespace sieve::gpu {

namespace {

// The agreed scales, handed from op 1 to op 2 (both run on the progress
// thread, in order).
struct Agreed {
  std::vector<float> scales;
  bool ok = false;
};

StagedOp OneChunk(const char* name, cu::Stream stream, StagedChunk chunk) {
  StagedOp op;
  op.name = name;
  op.stream = stream;
  op.depth = 1;
  op.chunks.push_back(std::move(chunk));
  return op;
}

// Op 1: the block maxima in, the agreed scales out (and kept for op 2).
StagedOp ScalesOp(Comm& comm, cu::Stream stream, float* d_scales, size_t nblocks,
                  std::shared_ptr<Agreed> agreed) {
  const size_t bytes = nblocks * sizeof(float);
  StagedChunk c;
  c.bytes = bytes;
  c.in.push_back({0, d_scales, bytes});
  c.out.push_back({0, d_scales, bytes});
  Comm* cm = &comm;
  c.run = [cm, nblocks, agreed](char* staging) {
    auto* scales = reinterpret_cast<float*>(staging);
    SIEVE_RETURN_IF_ERROR(coll::TernaryAgreeScales(*cm, scales, nblocks));
    agreed->scales.assign(scales, scales + nblocks);
    agreed->ok = true;
    return Status::OK();
  };
  return OneChunk("ternary allreduce (scales)", stream, std::move(c));
}

// Op 2: this rank's 2-bit wire in, the final sums' wire (TernaryBits(n) bits
// an element) out, dequantized on the stream afterwards.
StagedOp WireOp(Comm& comm, const coll::TernaryArgs& args, cu::Stream stream, void* d_wire,
                size_t wire_bytes, void* d_sums, size_t sums_bytes,
                std::shared_ptr<Agreed> agreed) {
  StagedChunk c;
  c.bytes = wire_bytes + sums_bytes;
  c.in.push_back({0, d_wire, wire_bytes});
  c.out.push_back({wire_bytes, d_sums, sums_bytes});
  Comm* cm = &comm;
  c.run = [cm, args, wire_bytes, sums_bytes, agreed](char* staging) {
    if (!agreed->ok)  // op 1 failed (reported already): no scales to run on
      return Status::Internal("ternary allreduce on device buffers: the scales were not agreed");
    if (cm->FirstUse("ternary allreduce on device buffers", 0))
      SIEVE_INFO(kLogInit,  // a path choice, logged with the communicator's others
                 "ternary allreduce on device buffers: abs-max/quantize/dequantize kernels on "
                 "the caller's stream; staged %zu scale bytes each way, %zu wire bytes to the "
                 "host and %zu bytes of final sums back (dense: %zu bytes each way)",
                 agreed->scales.size() * sizeof(float), wire_bytes, sums_bytes,
                 args.base.count * kernels::DTypeSize(args.base.dtype));
    // args.base's device buffers are not touched here: the codes come from
    // the staged wire and the sums go back through staging.
    Status st = coll::TernaryAllReduceQuantized(*cm, args, agreed->scales.data(), staging,
                                                staging + wire_bytes);
    if (st.ok()) cm->LogTransportOnce();
    return st;
  };
  return OneChunk("ternary allreduce", stream, std::move(c));
}

}  // namespace

Status EnqueueDeviceTernary(Comm& comm, const coll::TernaryArgs& args, CUstream_st* stream) {
  ProgressEngine* engine = nullptr;
  SIEVE_RETURN_IF_ERROR(EngineFor(comm, &engine));
  DeviceOps* ops = Runtime().ops;
  const coll::CollArgs& b = args.base;
  const size_t nblocks = (b.count + args.block - 1) / args.block;
  const size_t scale_bytes = nblocks * sizeof(float);
  const size_t wire_bytes = kernels::TernaryPackedBytes(b.count, kernels::TernaryBits(1));
  const int n = comm.size();
  const int sums_bits = kernels::TernaryBits(n);
  const size_t sums_bytes = kernels::TernaryPackedBytes(b.count, sums_bits);
  const int divisor = b.op == kernels::RedOp::kAvg ? (args.divisor > 0 ? args.divisor : n) : 1;
  const kernels::PhiloxStream rng{
      args.seed, static_cast<uint32_t>(args.rng_rank >= 0 ? args.rng_rank : comm.rank()),
      args.step};

  // One scratch: the scales, this rank's wire, the final sums' wire.
  void* scratch = nullptr;
  SIEVE_RETURN_IF_ERROR(
      ops->AllocDevice(scale_bytes + wire_bytes + sums_bytes, stream, &scratch));
  auto* d_scales = static_cast<float*>(scratch);
  void* d_wire = static_cast<char*>(scratch) + scale_bytes;
  void* d_sums = static_cast<char*>(d_wire) + wire_bytes;
  auto agreed = std::make_shared<Agreed>();
  // Each step is queued behind the previous one on the stream; after a failed
  // enqueue the stream was released and the outputs are undefined, as for
  // every device collective.
  Status st = ops->TernaryAbsMax(b.dtype, b.send, b.count, args.block, d_scales, stream);
  if (st.ok()) st = engine->Enqueue(ScalesOp(comm, stream, d_scales, nblocks, agreed));
  if (st.ok())
    st = ops->TernaryQuantize(b.dtype, b.send, b.count, args.block, d_scales, rng, d_wire,
                              stream);
  if (st.ok())
    st = engine->Enqueue(
        WireOp(comm, args, stream, d_wire, wire_bytes, d_sums, sums_bytes, agreed));
  if (st.ok())
    st = ops->TernaryDequantize(b.dtype, d_sums, sums_bits, b.count, args.block, d_scales,
                                divisor, b.recv, stream);
  Status freed = ops->FreeDevice(scratch, stream);
  return st.ok() ? freed : st;
}

}  // namespace sieve::gpu
