// Creating a communicator's progress engine, with one INFO line on the path.
#include "gpu/comm_engine.h"

#include <memory>
#include <string>

#include "core/log.h"
#include "gpu/direct_path.h"
#include "gpu/gpu_runtime.h"

namespace sieve::gpu {

ProgressEngine* ExistingEngine(Comm& comm) {
  return static_cast<ProgressEngine*>(comm.gpu_state().get());
}

Status EngineFor(Comm& comm, ProgressEngine** out) {
  std::shared_ptr<void>& slot = comm.gpu_state();
  if (!slot) {
    const GpuRuntime& rt = Runtime();
    if (rt.ops == nullptr)
      return Status::CudaError(StrFormat("device buffer without a usable CUDA driver (%s)",
                                         rt.description.c_str()));
    const Config& cfg = comm.config();
    ProgressEngine::Options options;
    options.sync = cfg.gpu_sync || !rt.ops->HasStreamMemOps();
    options.staging_cap = cfg.gpu_staging_bytes;
    options.abort = comm.WaitOptions().abort;
    options.drain_timeout_s = cfg.timeout_s;
    options.numa = comm.placement().numa;  // -1 with SIEVE_BIND=NONE
    Comm* c = &comm;
    options.on_async_error = [c](const Status& st) { c->RecordAsyncError(st); };
    slot = std::make_shared<ProgressEngine>(rt.ops, options);
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
  *out = static_cast<ProgressEngine*>(slot.get());
  return Status::OK();
}

}  // namespace sieve::gpu
