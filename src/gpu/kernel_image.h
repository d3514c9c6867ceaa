// The device kernels libsieve launches itself, embedded at build time.
//
// Why embedded and driver-launched: libsieve must load and run on machines
// without CUDA, so it links no CUDA library (the driver is dlopen'ed, see
// cuda_driver.h). With nvcc, the build compiles kernels/cuda/module_entry.cu
// to a fatbin (SASS for each real architecture + PTX for newer parts) and
// embeds it here as bytes; at run time cuModuleLoadData loads it into the
// current context and cuLaunchKernel launches its extern "C" entries. A
// separate plugin .so would work too, but would be one more file to install,
// find and keep in version lock with libsieve.
#ifndef SIEVE_GPU_KERNEL_IMAGE_H_
#define SIEVE_GPU_KERNEL_IMAGE_H_

#include <cstddef>

namespace sieve::gpu {

extern const unsigned char kKernelImage[];
extern const size_t kKernelImageBytes;  // 0: built without nvcc (no device kernels)

}  // namespace sieve::gpu

#endif  // SIEVE_GPU_KERNEL_IMAGE_H_
