// Ternary all-reduce of a device vector: error-feedback, abs-max, quantize and
// dequantize kernels on the stream; scales, wire and final sums staged
// through the progress engine.
#include "ternary/device_ternary.h"

#include <memory>
#include <string>
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
  Status failed;  // op 1's error: op 2 reports it again (what the call met first)
};

// The ternary all-reduce's host half: op 1 opens the call (its channel) and
// agrees on the scales, op 2 runs the host path's ring/tree from the codes.
class AllReduceHalf : public QuantizedHostHalf {
 public:
  AllReduceHalf(Comm& comm, const coll::TernaryArgs& args) : comm_(comm), args_(args) {}
  Status AgreeScales(float* scales, size_t nblocks) override {
    return coll::TernaryAgreeScales(comm_, args_, scales, nblocks, &call_);
  }
  Status Exchange(const float* scales, const void* wire, void* sums) override {
    Status st = coll::TernaryAllReduceQuantized(comm_, args_, call_.get(), scales, wire, sums);
    call_.reset();  // the call is over
    return st;
  }

 private:
  Comm& comm_;
  const coll::TernaryArgs args_;
  std::shared_ptr<coll::TernaryCall> call_;  // opened by op 1 (null on one rank)
};

// Op 1: the block maxima in, the agreed scales out (and kept for op 2).
StagedOp ScalesOp(const DeviceTernaryRun& run, cu::Stream stream, float* d_scales,
                  size_t nblocks, std::shared_ptr<Agreed> agreed) {
  const size_t bytes = nblocks * sizeof(float);
  StagedChunk c;
  c.bytes = bytes;
  c.in.push_back({0, d_scales, bytes});
  c.out.push_back({0, d_scales, bytes});
  std::shared_ptr<QuantizedHostHalf> host = run.host;
  c.run = [host, nblocks, agreed](char* staging) {
    auto* scales = reinterpret_cast<float*>(staging);
    agreed->failed = host->AgreeScales(scales, nblocks);
    SIEVE_RETURN_IF_ERROR(agreed->failed);
    agreed->scales.assign(scales, scales + nblocks);
    agreed->ok = true;
    return Status::OK();
  };
  return OneChunkOp(run.scales_name, stream, std::move(c));
}

// The path, once per communicator and kind of run.
void LogPath(Comm& comm, const DeviceTernaryRun& run, size_t scale_bytes, size_t wire_bytes,
             size_t sums_bytes) {
  const bool feedback = run.residual != nullptr;
  const std::string path =
      std::string(run.name) + " on device buffers" + (feedback ? " with error feedback" : "");
  if (!comm.FirstUse(path, 0)) return;
  SIEVE_INFO(kLogInit,  // a path choice, logged with the communicator's others
             "%s: abs-max/quantize/dequantize kernels on the caller's stream%s%s; staged %zu "
             "scale bytes each way, %zu wire bytes to the host and %zu bytes of final sums back "
             "(dense: %zu bytes each way)",
             path.c_str(),
             run.masked ? ", packed by the mask first and scattered with zero-fill by the "
                          "dequantize"
                        : "",
             feedback ? ", the residual in device memory updated in the quantize pass" : "",
             scale_bytes, wire_bytes, sums_bytes, run.dense_bytes);
}

// Op 2: this rank's wire in, the final sums' wire (TernaryBits(nL) bits an
// element) out, dequantized on the stream afterwards.
StagedOp WireOp(Comm& comm, const DeviceTernaryRun& run, cu::Stream stream, void* d_wire,
                size_t wire_bytes, void* d_sums, size_t sums_bytes,
                std::shared_ptr<Agreed> agreed) {
  StagedChunk c;
  c.bytes = wire_bytes + sums_bytes;
  c.in.push_back({0, d_wire, wire_bytes});
  c.out.push_back({wire_bytes, d_sums, sums_bytes});
  Comm* cm = &comm;
  c.run = [cm, run, wire_bytes, sums_bytes, agreed](char* staging) {
    if (!agreed->ok)  // op 1 failed: no scales to run on; the call ends with its error
      return agreed->failed.ok() ? Status::Internal(StrFormat(
                                       "%s on device buffers: the scales were not agreed",
                                       run.name))
                                 : agreed->failed;
    LogPath(*cm, run, agreed->scales.size() * sizeof(float), wire_bytes, sums_bytes);
    if (run.masked) ++cm->stats().masked_collectives;
    // The device buffers are not touched here: the codes come from the
    // staged wire and the sums go back through staging.
    Status st = run.host->Exchange(agreed->scales.data(), staging, staging + wire_bytes);
    if (st.ok()) cm->LogTransportOnce();
    return st;
  };
  return OneChunkOp(run.name, stream, std::move(c));
}

size_t Aligned(size_t bytes) { return (bytes + 15) & ~size_t{15}; }

}  // namespace

Status EnqueueDeviceTernaryRun(Comm& comm, const DeviceTernaryRun& given, CUstream_st* stream) {
  DeviceTernaryRun run = given;
  const coll::TernaryArgs& args = run.args;
  const coll::CollArgs& b = args.base;
  if (args.residual != nullptr || args.mask_idx != nullptr ||
      (run.residual != nullptr && run.residual->elems != b.count))
    return Status::Internal(StrFormat("%s on device buffers: a host residual, a mask or a "
                                      "residual of another size", run.name));
  if (run.host == nullptr) {  // the all-reduce: every element's sums come back
    run.host = std::make_shared<AllReduceHalf>(comm, args);
    run.out_first = run.out_skip = 0;
    run.out_count = b.count;
  }
  if (run.out_first % args.block != 0 || run.out_skip > run.out_count ||
      run.out_first + run.out_count > b.count || (run.scatter.idx != nullptr && run.out_skip > 0))
    return Status::Internal(StrFormat("%s on device buffers: output range %zu + %zu (skip %zu) "
                                      "of %zu elements in blocks of %zu", run.name,
                                      run.out_first, run.out_count, run.out_skip, b.count,
                                      args.block));
  ProgressEngine* engine = nullptr;
  SIEVE_RETURN_IF_ERROR(EngineFor(comm, {b.send, b.recv}, &engine));
  DeviceOps* ops = Runtime().ops;
  const size_t nblocks = (b.count + args.block - 1) / args.block;
  const size_t scale_bytes = nblocks * sizeof(float);
  const int levels = args.levels;  // 1: ternary
  const size_t wire_bytes = kernels::TernaryPackedBytes(b.count, kernels::TernaryBits(levels));
  const int n = comm.size();
  const int sums_bits = kernels::TernaryBits(n * levels);
  const size_t sums_bytes = kernels::TernaryPackedBytes(run.out_count, sums_bits);
  const size_t esize = kernels::DTypeSize(b.dtype);
  const size_t sent_bytes = run.residual != nullptr ? b.count * esize : 0;
  // Dequantized whole from a block boundary, the first out_skip dropped on a copy.
  const size_t out_bytes = run.out_skip > 0 ? run.out_count * esize : 0;
  const int divisor =
      levels * (b.op == kernels::RedOp::kAvg ? (args.divisor > 0 ? args.divisor : n) : 1);
  const kernels::PhiloxStream rng{
      args.seed, static_cast<uint32_t>(args.rng_rank >= 0 ? args.rng_rank : comm.rank()),
      args.step};

  // One scratch: the scales, this rank's wire, the final sums' wire and, with
  // error feedback, the sum sent (g + e_prev in the datatype); with a skip,
  // the dequantized output range.
  const size_t wire_at = Aligned(scale_bytes), sums_at = wire_at + Aligned(wire_bytes);
  const size_t sent_at = sums_at + Aligned(sums_bytes), out_at = sent_at + Aligned(sent_bytes);
  void* scratch = nullptr;
  SIEVE_RETURN_IF_ERROR(ops->AllocDevice(out_at + out_bytes, stream, &scratch));
  char* base = static_cast<char*>(scratch);
  auto* d_scales = reinterpret_cast<float*>(base);
  void* d_wire = base + wire_at;
  void* d_sums = base + sums_at;
  auto agreed = std::make_shared<Agreed>();
  // Each step is queued behind the previous one on the stream; after a failed
  // enqueue the stream was released and the outputs are undefined, as for
  // every device collective.
  const void* in = b.send;
  Status st;
  if (run.residual != nullptr) {
    in = base + sent_at;
    st = ops->TernaryFeedbackApply(b.dtype, b.send, run.residual->data, run.residual->fresh,
                                   base + sent_at, b.count, stream);
    if (st.ok()) run.residual->fresh = false;  // written by that kernel
  }
  // The scale is the gradient's, not the sum sent's (kernels/ternary.h); the residual
  // (g + e_prev by now) only tells which blocks an earlier NaN scale poisoned.
  if (st.ok())
    st = ops->TernaryAbsMax(b.dtype, b.send, run.residual != nullptr ? run.residual->data : nullptr,
                            b.count, args.block, d_scales, stream);
  if (st.ok()) st = engine->Enqueue(ScalesOp(run, stream, d_scales, nblocks, agreed));
  if (st.ok())
    st = run.residual != nullptr
             ? ops->TernaryQuantizeFeedback(b.dtype, in, b.count, args.block, d_scales, rng,
                                            levels, d_wire, run.residual->data, stream)
             : ops->TernaryQuantize(b.dtype, in, b.count, args.block, d_scales, rng, levels,
                                    d_wire, stream);
  if (st.ok())
    st = engine->Enqueue(
        WireOp(comm, run, stream, d_wire, wire_bytes, d_sums, sums_bytes, agreed));
  const float* out_scales = d_scales + run.out_first / args.block;
  if (st.ok() && run.scatter.idx != nullptr) {
    st = ops->TernaryDequantizeScatter(b.dtype, d_sums, sums_bits, run.out_count, args.block,
                                       out_scales, divisor, run.scatter.idx, run.scatter.bits,
                                       run.scatter.count, b.recv, stream);
  } else if (st.ok() && run.out_skip == 0) {
    st = ops->TernaryDequantize(b.dtype, d_sums, sums_bits, run.out_count, args.block,
                                out_scales, divisor, b.recv, stream);
  } else if (st.ok()) {
    st = ops->TernaryDequantize(b.dtype, d_sums, sums_bits, run.out_count, args.block,
                                out_scales, divisor, base + out_at, stream);
    if (st.ok())
      st = ops->CopyDevice(b.recv, base + out_at + run.out_skip * esize,
                           (run.out_count - run.out_skip) * esize, stream);
  }
  Status freed = ops->FreeDevice(scratch, stream);
  return st.ok() ? freed : st;
}

Status EnqueueDeviceTernary(Comm& comm, const coll::TernaryArgs& args, DeviceResidual* residual,
                            CUstream_st* stream) {
  DeviceTernaryRun run;
  run.args = args;
  run.residual = residual;
  run.dense_bytes = args.base.count * kernels::DTypeSize(args.base.dtype);
  return EnqueueDeviceTernaryRun(comm, run, stream);
}

}  // namespace sieve::gpu
