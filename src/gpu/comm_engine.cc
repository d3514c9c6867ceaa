// Creating a communicator's progress engine, with one INFO line on the path.
#include "gpu/comm_engine.h"

#include <memory>
#include <string>

#include "core/log.h"
#include "gpu/direct_path.h"
#include "gpu/gpu_runtime.h"

namespace sieve::gpu {

namespace {

// The calling thread's context and device, or why there is none.
Status CallerDevice(DeviceOps* ops, cu::Context* ctx, int* device) {
  SIEVE_RETURN_IF_ERROR(ops->CurrentContext(ctx));
  if (*ctx == nullptr)
    return Status::CudaError(
        "no CUDA context is current on the calling thread; select the device of the buffers "
        "(cudaSetDevice) before a call on device memory");
  return ops->CurrentDevice(device);
}

// This call's context and buffers against the communicator's device.
Status CheckDevice(const ProgressEngine& engine, cu::Context ctx, int device,
                   std::initializer_list<const void*> buffers) {
  if (ctx != engine.context())
    return Status::InvalidUsage(StrFormat(
        "this communicator's device work runs on device %d (the CUDA context current at its "
        "first call on device memory); the calling thread's current context is %s device %d: "
        "make device %d current (cudaSetDevice) before calling",
        engine.device(), device == engine.device() ? "another context of" : "on", device,
        engine.device()));
  for (const void* p : buffers) {
    if (p == nullptr) continue;
    const int on = Runtime().classifier->DeviceOf(p);
    if (on >= 0 && on != engine.device())
      return Status::InvalidUsage(StrFormat(
          "buffer %p is memory of device %d, but this communicator works on device %d (one "
          "communicator, one device, as in NCCL)",
          p, on, engine.device()));
  }
  return Status::OK();
}

}  // namespace

Status EngineFor(Comm& comm, std::initializer_list<const void*> buffers, ProgressEngine** out) {
  const GpuRuntime& rt = Runtime();
  if (rt.ops == nullptr)
    return Status::CudaError(StrFormat("device buffer without a usable CUDA driver (%s)",
                                       rt.description.c_str()));
  cu::Context ctx = nullptr;
  int device = 0;
  SIEVE_RETURN_IF_ERROR(CallerDevice(rt.ops, &ctx, &device));
  WorkQueue* queue = comm.work_queue();
  auto* engine = dynamic_cast<ProgressEngine*>(queue);
  if (queue != nullptr && engine == nullptr)
    return Status::Internal("the communicator's work queue is not the device progress engine");
  if (engine == nullptr) {
    // Loaded here, on the caller's thread, before any stream of this
    // communicator is parked (a load may synchronize the device). A module
    // that does not load (no image for this GPU) makes HasKernels false: the
    // paths that need kernels stage instead.
    std::string no_kernels;
    if (rt.ops->HasKernels(&no_kernels)) {
      Status loaded = rt.ops->PrepareKernels();
      if (!loaded.ok())
        SIEVE_WARN("device kernels unusable, device buffers are staged whole: %s",
                   loaded.message().c_str());
    }
    const Config& cfg = comm.config();
    ProgressEngine::Options options;
    options.context = ctx;
    options.device = device;
    options.sync = cfg.gpu_sync || !rt.ops->HasStreamMemOps();
    options.staging_cap = cfg.gpu_staging_bytes;
    options.abort = comm.WaitOptions().abort;
    options.drain_timeout_s = cfg.timeout_s;
    options.numa = comm.placement().numa;  // -1 with SIEVE_BIND=NONE
    Comm* c = &comm;
    options.on_async_error = [c](const Status& st) { c->RecordAsyncError(st); };
    auto created = std::make_shared<ProgressEngine>(rt.ops, options);
    engine = created.get();
    comm.SetWorkQueue(std::move(created));
    std::string why;
    const bool direct = DirectPath(comm, &why);
    const char* handshake = options.sync
                                ? "blocking (SIEVE_GPU_SYNC=1 or no stream memory operations)"
                                : "cuStreamWaitValue32/cuStreamWriteValue32, host not blocked";
    if (direct) {
      SIEVE_INFO(kLogInit,
                 "device buffers: direct for the dense collectives (%s): device memory handed "
                 "to UCX, reductions by device kernels on the progress thread's stream; the "
                 "hierarchical all-reduce and the compressed modes staged through pinned host "
                 "memory in chunks of %zu bytes, %zu in flight; stream handshake: %s",
                 why.c_str(), cfg.gpu_chunk_bytes, cfg.gpu_pipeline, handshake);
    } else {
      SIEVE_INFO(kLogInit,
                 "device buffers: staged for every collective (%s): pinned host memory in chunks "
                 "of %zu bytes, %zu in flight, reduced by the host algorithms in host memory; "
                 "stream handshake: %s",
                 why.c_str(), cfg.gpu_chunk_bytes, cfg.gpu_pipeline, handshake);
    }
  }
  *out = engine;
  return CheckDevice(**out, ctx, device, buffers);
}

}  // namespace sieve::gpu
