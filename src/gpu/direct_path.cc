// The direct/staged choice from SIEVE_GPU_DIRECT, the kernels and UCX.
#include "gpu/direct_path.h"

#include "gpu/gpu_runtime.h"

namespace sieve::gpu {

bool DirectPath(Comm& comm, std::string* why) {
  const GpuDirectParam mode = comm.config().gpu_direct;
  if (mode == GpuDirectParam::kOff) {
    *why = "SIEVE_GPU_DIRECT=0";
    return false;
  }
  std::string no_kernels;
  DeviceOps* ops = Runtime().ops;
  if (ops == nullptr || !ops->HasKernels(&no_kernels)) {
    *why = "no device kernels for the reductions: " + no_kernels;
    return false;
  }
  if (Runtime().max_connections == 1 && !comm.config().gpu_sync && ops->HasStreamMemOps()) {
    *why = "CUDA_DEVICE_MAX_CONNECTIONS=1: the progress thread's kernels would queue behind the "
           "caller's parked stream in the one hardware queue (SIEVE_GPU_SYNC=1 allows direct)";
    return false;
  }
  if (mode == GpuDirectParam::kForce) {
    *why = "SIEVE_GPU_DIRECT=FORCE, tests only: UCX's CUDA memory support not checked";
    return true;
  }
  if (!comm.transport()->SupportsCudaMemory()) {
    *why = "UCX has no CUDA memory support";
    return false;
  }
  *why = "UCX supports CUDA memory";
  return true;
}

}  // namespace sieve::gpu
