// EngineStreams: created on the caller's thread, destroyed with the progress engine.
#include "gpu/engine_streams.h"

#include "core/log.h"

namespace sieve::gpu {

void EngineStreams::Release() {
  std::lock_guard<std::mutex> lock(mu_);
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
  contexts_.clear();
}

Status EngineStreams::Prepare(cu::Context ctx, cu::Stream* stream, DeviceScratch** scratch) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = contexts_.find(ctx);
  if (it == contexts_.end()) {
    PerContext per;
    SIEVE_RETURN_IF_ERROR(ops_->CreateStream(&per.stream));
    per.scratch = std::make_unique<DeviceScratch>(ops_);
    it = contexts_.emplace(ctx, std::move(per)).first;
  }
  *stream = it->second.stream;
  *scratch = it->second.scratch.get();
  return Status::OK();
}

Status EngineStreams::Lookup(cu::Context ctx, cu::Stream* stream, DeviceScratch** scratch) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = contexts_.find(ctx);
  if (it == contexts_.end())
    return Status::Internal("the direct path's stream was not prepared at enqueue");
  *stream = it->second.stream;
  *scratch = it->second.scratch.get();
  return Status::OK();
}

}  // namespace sieve::gpu
