// The progress thread's own streams, one per CUDA context it has worked in:
// the direct path's kernels run there, never on a caller's stream (which is
// parked on the handshake while the network part runs).
#ifndef SIEVE_GPU_ENGINE_STREAMS_H_
#define SIEVE_GPU_ENGINE_STREAMS_H_

#include <map>
#include <mutex>

#include "gpu/device_ops.h"

namespace sieve::gpu {

class EngineStreams {
 public:
  explicit EngineStreams(DeviceOps* ops) : ops_(ops) {}
  // Destroys each stream in its context (their work is done by then).
  ~EngineStreams();
  EngineStreams(const EngineStreams&) = delete;
  EngineStreams& operator=(const EngineStreams&) = delete;

  // The stream of `ctx`, created on first use. REQUIRES: ctx is current.
  Status For(cu::Context ctx, cu::Stream* out);

 private:
  DeviceOps* ops_;
  std::mutex mu_;
  std::map<cu::Context, cu::Stream> streams_;
};

}  // namespace sieve::gpu

#endif  // SIEVE_GPU_ENGINE_STREAMS_H_
