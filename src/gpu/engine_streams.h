// The progress thread's own streams and direct-path scratch, one each per
// CUDA context it has worked in: the direct path's kernels run there, never on
// a caller's stream (which is parked on the handshake while the network part
// runs), and its scratch blocks are reused from call to call. Both are made
// on the caller's thread (Prepare, at enqueue), where creating a stream or
// allocating may synchronize the device without a deadlock; the progress
// thread only looks them up.
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
  // done by then): Release, if the engine's teardown has not.
  ~EngineStreams() { Release(); }
  void Release();
  EngineStreams(const EngineStreams&) = delete;
  EngineStreams& operator=(const EngineStreams&) = delete;

  // The caller's thread: the stream and scratch of `ctx`, created on first
  // use. REQUIRES: ctx is current.
  Status Prepare(cu::Context ctx, cu::Stream* stream, DeviceScratch** scratch);
  // The progress thread: those Prepare made for `ctx`.
  Status Lookup(cu::Context ctx, cu::Stream* stream, DeviceScratch** scratch);

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
