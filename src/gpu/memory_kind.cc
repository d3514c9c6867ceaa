// Per-call pointer classification.
#include "gpu/memory_kind.h"

#include "plan/device_choice.h"

namespace sieve::gpu {

MemoryKind DriverClassifier::Classify(const void* ptr) const {
  if (ptr == nullptr) return MemoryKind::kHost;
  unsigned type = 0;
  // Plain host memory the driver never saw answers CUDA_ERROR_INVALID_VALUE.
  cu::Result r = driver_->PointerGetAttribute(&type, cu::kPointerAttributeMemoryType,
                                              reinterpret_cast<cu::DevicePtr>(ptr));
  if (r != cu::kSuccess) return MemoryKind::kHost;
  return type == cu::kMemoryTypeDevice || type == cu::kMemoryTypeUnified ||
                 type == cu::kMemoryTypeArray
             ? MemoryKind::kDevice
             : MemoryKind::kHost;
}

int DriverClassifier::DeviceOf(const void* ptr) const {
  int ordinal = -1;
  if (ptr == nullptr ||
      driver_->PointerGetAttribute(&ordinal, cu::kPointerAttributeDeviceOrdinal,
                                   reinterpret_cast<cu::DevicePtr>(ptr)) != cu::kSuccess)
    return -1;
  return ordinal;
}

Status ClassifyCall(const PointerClassifier& classifier, std::initializer_list<NamedBuffer> buffers,
                    MemoryKind* out) {
  return plan::ChooseMemoryWith([&classifier](const void* p) { return classifier.Classify(p); },
                                buffers, out);
}

}  // namespace sieve::gpu
