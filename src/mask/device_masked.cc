// Masked all-reduce on device buffers: pack and unpack kernels on the stream,
// the packed vector staged through the progress engine.
#include "mask/device_masked.h"

#include <mutex>

#include "core/log.h"
#include "gpu/comm_engine.h"
#include "gpu/gpu_runtime.h"

namespace sieve::gpu {

namespace {

// The mask's kept indices and bitmap in device memory, uploaded on first use
// into the context current then (a mask serves one communicator, so one device).
// Stream-ordered memory: a call on another stream than the last one first
// orders that stream after the last (an event), so the upload and every
// earlier kernel on it come first; freed on the last stream (stream-ordered),
// so a kernel still queued there finishes first; that stream must outlive the
// mask, as the streams of a communicator must outlive it in NCCL.
struct DeviceMask {
  DeviceOps* ops = nullptr;
  void* idx = nullptr;
  void* bits = nullptr;
  cu::Stream last_stream = nullptr;
  ~DeviceMask() {
    for (void* p : {idx, bits}) {
      if (p == nullptr) continue;
      Status st = ops->FreeDevice(p, last_stream);
      if (!st.ok()) SIEVE_WARN("freeing a mask's device copy: %s", st.ToString().c_str());
    }
  }
};

std::mutex device_mask_mu;  // MaskState::device_copy may be reached from several callers

Status DeviceCopyOf(DeviceOps* ops, mask::MaskState& mask, cu::Stream stream, DeviceMask** out) {
  std::lock_guard<std::mutex> lock(device_mask_mu);
  auto* copy = static_cast<DeviceMask*>(mask.device_copy.get());
  if (copy == nullptr) {
    auto fresh = std::make_shared<DeviceMask>();
    fresh->ops = ops;
    fresh->last_stream = stream;
    const size_t idx_bytes = mask.idx.size() * sizeof(uint32_t);
    const size_t bits_bytes = mask.bits.size() * sizeof(uint64_t);
    SIEVE_RETURN_IF_ERROR(ops->AllocDevice(idx_bytes, stream, &fresh->idx));
    SIEVE_RETURN_IF_ERROR(ops->AllocDevice(bits_bytes, stream, &fresh->bits));
    // The host vectors live as long as the mask, which outlives this upload.
    SIEVE_RETURN_IF_ERROR(ops->CopyToDevice(fresh->idx, mask.idx.data(), idx_bytes, stream));
    SIEVE_RETURN_IF_ERROR(ops->CopyToDevice(fresh->bits, mask.bits.data(), bits_bytes, stream));
    mask.device_copy = fresh;
    copy = fresh.get();
  }
  if (copy->last_stream != stream) {
    SIEVE_RETURN_IF_ERROR(ops->OrderAfter(stream, copy->last_stream));
    copy->last_stream = stream;
  }
  *out = copy;
  return Status::OK();
}

// Where the packed vector travels from; logged once per communicator.
const char* TransferPath(Comm& comm) {
  // The ring's combine runs on the host (CPU kernels), so even a UCX that
  // takes CUDA memory gets the packed vector in pinned host memory.
  return comm.transport()->SupportsCudaMemory()
             ? "staged through pinned host memory (UCX supports CUDA memory, but the "
               "reduction runs on the host)"
             : "staged through pinned host memory (UCX has no CUDA memory support)";
}

}  // namespace

Status DeviceMaskOf(mask::MaskState& mask, CUstream_st* stream, const uint32_t** idx,
                    const uint64_t** bits) {
  DeviceMask* dmask = nullptr;
  SIEVE_RETURN_IF_ERROR(DeviceCopyOf(Runtime().ops, mask, stream, &dmask));
  *idx = static_cast<const uint32_t*>(dmask->idx);
  *bits = static_cast<const uint64_t*>(dmask->bits);
  return Status::OK();
}

bool CanPackOnDevice() {
  const GpuRuntime& rt = Runtime();
  std::string why;
  // Scratch and the mask's device copy are stream-ordered memory.
  return rt.ops != nullptr && rt.ops->HasKernels(&why) && rt.ops->HasMemoryPools(&why);
}

Status EnqueueDevicePacked(Comm& comm, const char* name, const coll::CollArgs& args,
                           std::shared_ptr<mask::MaskState> mask, CUstream_st* stream,
                           PackedCollective host) {
  ProgressEngine* engine = nullptr;
  SIEVE_RETURN_IF_ERROR(EngineFor(comm, {args.send, args.recv}, &engine));
  DeviceOps* ops = Runtime().ops;
  const size_t esize = kernels::DTypeSize(args.dtype);
  const size_t nnz = mask->idx.size();
  const size_t packed_bytes = nnz * esize;
  const uint32_t* d_idx = nullptr;
  const uint64_t* d_bits = nullptr;
  SIEVE_RETURN_IF_ERROR(DeviceMaskOf(*mask, stream, &d_idx, &d_bits));

  void* scratch = nullptr;
  SIEVE_RETURN_IF_ERROR(ops->AllocDevice(packed_bytes, stream, &scratch));
  Status st = ops->MaskedPack(esize, args.send, d_idx, nnz, scratch, stream);
  if (st.ok()) {
    StagedOp op;
    op.name = name;
    op.stream = stream;
    op.depth = 1;  // one piece: the same plan as the host path, bit for bit
    StagedChunk chunk;
    chunk.bytes = packed_bytes;
    chunk.in.push_back({0, scratch, packed_bytes});
    chunk.out.push_back({0, scratch, packed_bytes});
    Comm* c = &comm;
    coll::CollArgs packed = args;
    packed.count = nnz;
    // `mask` rides along: the host part reads it, and it must outlive the call.
    chunk.run = [c, name, packed, mask, host = std::move(host),
                 dense_bytes = args.count * esize](char* staging) {
      if (c->FirstUse(std::string(name) + " on device buffers", 0))
        SIEVE_INFO(kLogInit,  // a path choice, logged with the communicator's others
                   "%s on device buffers: pack/unpack kernels on the caller's stream, %zu of "
                   "%zu bytes %s",
                   name, packed.count * kernels::DTypeSize(packed.dtype), dense_bytes,
                   TransferPath(*c));
      coll::CollArgs s = packed;
      s.send = staging;
      s.recv = staging;
      Status result = host(s);
      if (result.ok()) c->LogTransportOnce();
      return result;
    };
    op.chunks.push_back(std::move(chunk));
    st = engine->Enqueue(std::move(op));
  }
  // Queued behind the copy-back; after a failed enqueue the stream was released
  // and the outputs are undefined, as for every device collective.
  if (st.ok())
    st = ops->MaskedUnpack(esize, scratch, d_idx, nnz, d_bits, args.count, args.recv, stream);
  Status freed = ops->FreeDevice(scratch, stream);
  return st.ok() ? freed : st;
}

}  // namespace sieve::gpu
