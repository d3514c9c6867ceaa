// The progress thread's own streams and direct-path scratch, one each per
// CUDA context it has worked in: the direct path's kernels run there, never on
// a caller's stream (which is parked on the handshake while the network part
// runs), and its scratch blocks are reused from call to call.
#ifndef SIEVE_GPU_ENGINE_STREAMS_H_
#define SIEVE_GPU_ENGINE_STREAMS_H_

#include <map>
#include <memory>
#include <mutex>

#include "gpu/device_ops.h"
#include "gpu/device_scratch.h"

namespace sieve::gpu {

class EngineStreams {
 public:
  explicit EngineStreams(DeviceOps* ops) : ops_(ops) {}
  // Releases each context's scratch and stream in that context (their work is
  // done by then).
  ~EngineStreams();
  EngineStreams(const EngineStreams&) = delete;
  EngineStreams& operator=(const EngineStreams&) = delete;

  // The stream of `ctx`, created on first use. REQUIRES: ctx is current.
  Status For(cu::Context ctx, cu::Stream* out);
  // The scratch cache of `ctx` (created with its stream by For).
  DeviceScratch* ScratchOf(cu::Context ctx);

 private:
  struct PerContext {
    cu::Stream stream = nullptr;
    std::unique_ptr<DeviceScratch> scratch;
  };
  DeviceOps* ops_;
  std::mutex mu_;
  std::map<cu::Context, PerContext> contexts_;
};

}  // namespace sieve::gpu

#endif  // SIEVE_GPU_ENGINE_STREAMS_H_
