// EngineStreams: created lazily, destroyed with the progress engine.
#include "gpu/engine_streams.h"

#include "core/log.h"

namespace sieve::gpu {

EngineStreams::~EngineStreams() {
  for (auto& [ctx, per] : contexts_) {
    Status st = ops_->PushContext(ctx);
    if (st.ok()) {
      per.scratch.reset();  // frees its blocks in their context
      st = ops_->DestroyStream(per.stream);
      Status popped = ops_->PopContext();
      if (st.ok()) st = popped;
    }
    if (!st.ok()) SIEVE_WARN("destroying the progress thread's stream: %s", st.message().c_str());
  }
}

Status EngineStreams::For(cu::Context ctx, cu::Stream* out) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = contexts_.find(ctx);
  if (it != contexts_.end()) {
    *out = it->second.stream;
    return Status::OK();
  }
  PerContext per;
  SIEVE_RETURN_IF_ERROR(ops_->CreateStream(&per.stream));
  per.scratch = std::make_unique<DeviceScratch>(ops_);
  *out = per.stream;
  contexts_[ctx] = std::move(per);
  return Status::OK();
}

DeviceScratch* EngineStreams::ScratchOf(cu::Context ctx) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = contexts_.find(ctx);
  return it == contexts_.end() ? nullptr : it->second.scratch.get();
}

}  // namespace sieve::gpu
