// The process's view of CUDA, loaded once on first use: whether a driver and
// a device are present, how pointers are classified, the device operations.
// Without a driver every pointer is host memory (one INFO line says why).
#ifndef SIEVE_GPU_GPU_RUNTIME_H_
#define SIEVE_GPU_GPU_RUNTIME_H_

#include <string>

#include "gpu/device_ops.h"
#include "gpu/memory_kind.h"

namespace sieve::gpu {

struct GpuRuntime {
  bool available = false;
  std::string description;  // "CUDA driver 13000, 1 device" or why there is none
  const PointerClassifier* classifier = nullptr;  // always set
  DeviceOps* ops = nullptr;                       // set when available
  // CUDA_DEVICE_MAX_CONNECTIONS as the driver read it (CUDA's variable, not
  // Sieve's: the hardware work queues streams share; 0 when unset). With 1,
  // every stream shares one queue (see gpu/direct_path.h).
  int max_connections = 0;
};

const GpuRuntime& Runtime();

// How many times Runtime() was asked since the process started: every way into
// gpu/ asks it (tests: a host call never does).
unsigned long RuntimeLookups();

// Tests only: replaces the runtime (a fake classifier and device) until
// called again with nullptr. Not thread-safe against calls in flight.
void SetRuntimeForTest(const GpuRuntime* fake);

}  // namespace sieve::gpu

#endif  // SIEVE_GPU_GPU_RUNTIME_H_
