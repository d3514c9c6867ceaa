// Per-call pointer classification.
#include "gpu/memory_kind.h"

#include <string>

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

const char* MemoryKindName(MemoryKind kind) {
  return kind == MemoryKind::kDevice ? "device" : "host";
}

Status ClassifyCall(const PointerClassifier& classifier, std::initializer_list<NamedBuffer> buffers,
                    MemoryKind* out) {
  bool any = false, mixed = false;
  MemoryKind first = MemoryKind::kHost;
  for (const NamedBuffer& b : buffers) {
    if (b.ptr == nullptr) continue;
    MemoryKind kind = classifier.Classify(b.ptr);
    if (any && kind != first) mixed = true;
    if (!any) first = kind;
    any = true;
  }
  if (mixed) {  // the message names every buffer (only built on this error path)
    std::string listing;
    for (const NamedBuffer& b : buffers) {
      if (b.ptr == nullptr) continue;
      listing += StrFormat("%s%s %p is %s memory", listing.empty() ? "" : ", ", b.name, b.ptr,
                           MemoryKindName(classifier.Classify(b.ptr)));
    }
    return Status::InvalidUsage(StrFormat(
        "buffers of one call must all be host or all be device memory: %s", listing.c_str()));
  }
  *out = first;
  return Status::OK();
}

}  // namespace sieve::gpu
