// DeviceScratch: AllocDevice/FreeDevice on the engine's stream.
#include "gpu/device_scratch.h"

namespace sieve::gpu {

Status DeviceScratch::Allocate(size_t bytes, void** out) {
  SIEVE_RETURN_IF_ERROR(ops_->AllocDevice(bytes, stream_, out));
  // Stream-ordered memory: the transport may write it only once it exists.
  return ops_->Synchronize(stream_);
}

void DeviceScratch::Free(void* p) {
  Status st = ops_->FreeDevice(p, stream_);
  if (status_.ok()) status_ = st;
}

}  // namespace sieve::gpu
