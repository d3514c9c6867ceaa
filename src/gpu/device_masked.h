// The masked all-reduce on device buffers with the kernels on the caller's
// stream: only the nnz packed elements cross to the host and back.
//
//   stream:   pack (device scratch) -> copy nnz elements to pinned staging ...
//   progress:     the masked all-reduce of the packed vector (mask/masked_allreduce.h)
//   stream:   ... copy the packed result back -> unpack with zero-fill -> free scratch
#ifndef SIEVE_GPU_DEVICE_MASKED_H_
#define SIEVE_GPU_DEVICE_MASKED_H_

#include <memory>

#include "coll/collectives.h"
#include "mask/mask_registry.h"

struct CUstream_st;

namespace sieve::gpu {

// Whether this process can pack on the device (a driver, and kernels built
// into libsieve); else callers stage the whole dense buffer (kAllReduceWhole).
bool CanPackOnDevice();

// Enqueues the masked all-reduce of the device buffers of `args` on `stream`
// and returns. mask->idx must be non-empty.
Status EnqueueDeviceMaskedAllReduce(Comm& comm, const coll::CollArgs& args,
                                    std::shared_ptr<mask::MaskState> mask, CUstream_st* stream);

}  // namespace sieve::gpu

#endif  // SIEVE_GPU_DEVICE_MASKED_H_
