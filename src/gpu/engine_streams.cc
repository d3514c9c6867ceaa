// EngineStreams: created lazily, destroyed with the progress engine.
#include "gpu/engine_streams.h"

#include "core/log.h"

namespace sieve::gpu {

EngineStreams::~EngineStreams() {
  for (auto& [ctx, stream] : streams_) {
    Status st = ops_->PushContext(ctx);
    if (st.ok()) {
      st = ops_->DestroyStream(stream);
      Status popped = ops_->PopContext();
      if (st.ok()) st = popped;
    }
    if (!st.ok()) SIEVE_WARN("destroying the progress thread's stream: %s", st.message().c_str());
  }
}

Status EngineStreams::For(cu::Context ctx, cu::Stream* out) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = streams_.find(ctx);
  if (it != streams_.end()) {
    *out = it->second;
    return Status::OK();
  }
  cu::Stream stream = nullptr;
  SIEVE_RETURN_IF_ERROR(ops_->CreateStream(&stream));
  *out = streams_[ctx] = stream;
  return Status::OK();
}

}  // namespace sieve::gpu
