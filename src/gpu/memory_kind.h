// How gpu/ tells host from device memory: the driver's pointer attributes. The
// decision per call (all host, all device, or an error naming the buffers that
// disagree) is plan/'s (plan/device_choice.h), asking the query gpu/ installs.
#ifndef SIEVE_GPU_MEMORY_KIND_H_
#define SIEVE_GPU_MEMORY_KIND_H_

#include <initializer_list>

#include "core/status.h"
#include "gpu/cuda_driver.h"
#include "plan/memory_kind.h"

namespace sieve::gpu {

using plan::MemoryKind;
using plan::MemoryKindName;
using plan::NamedBuffer;

// Answers "is this pointer device memory?". Implementations: the driver's
// pointer attributes (DriverClassifier) and fakes in tests.
class PointerClassifier {
 public:
  virtual ~PointerClassifier() = default;
  // Thread-safe. Host memory the driver does not know, pinned host memory and
  // nullptr are kHost; device and managed (unified) allocations are kDevice.
  virtual MemoryKind Classify(const void* ptr) const = 0;
  // The ordinal of the device a device pointer belongs to; -1 when unknown.
  virtual int DeviceOf(const void* ptr) const {
    (void)ptr;
    return -1;
  }
};

// Classifies with cuPointerGetAttribute(CU_POINTER_ATTRIBUTE_MEMORY_TYPE).
class DriverClassifier : public PointerClassifier {
 public:
  explicit DriverClassifier(const CudaDriver* driver) : driver_(driver) {}
  MemoryKind Classify(const void* ptr) const override;
  // cuPointerGetAttribute(CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL).
  int DeviceOf(const void* ptr) const override;

 private:
  const CudaDriver* driver_;
};

// plan::ChooseMemory's rule with `classifier` (tests' fakes).
Status ClassifyCall(const PointerClassifier& classifier, std::initializer_list<NamedBuffer> buffers,
                    MemoryKind* out);

}  // namespace sieve::gpu

#endif  // SIEVE_GPU_MEMORY_KIND_H_
