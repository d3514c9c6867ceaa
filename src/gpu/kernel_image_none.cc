// A libsieve built without nvcc: no kernel module, so device buffers of the
// compressed modes are staged whole and packed on the host.
#include "gpu/kernel_image.h"

namespace sieve::gpu {

const unsigned char kKernelImage[1] = {0};
const size_t kKernelImageBytes = 0;

}  // namespace sieve::gpu
