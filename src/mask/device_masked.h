// Masked all-reduces (plain, and ternary under the hierarchical plan; see
// ternary/device_masked_ternary.h for the flat one) on device buffers with the kernels on
// the caller's stream: only the nnz packed elements cross to the host and back.
//
//   stream:   pack (device scratch) -> copy nnz elements to pinned staging ...
//   progress:     the all-reduce of the packed vector (the mode's host code)
//   stream:   ... copy the packed result back -> unpack with zero-fill -> free scratch
#ifndef SIEVE_GPU_DEVICE_MASKED_H_
#define SIEVE_GPU_DEVICE_MASKED_H_

#include <functional>
#include <memory>

#include "coll/collectives.h"
#include "mask/mask_registry.h"

struct CUstream_st;

namespace sieve::gpu {

// Whether this process can pack on the device (a driver, kernels built into
// libsieve that load, and stream-ordered memory on the current context's
// device); else callers stage the whole dense buffer (kAllReduceWhole).
bool CanPackOnDevice();

// The mask's kept indices (nnz) and bitmap in device memory, uploaded on
// `stream` on first use and kept with the mask (freed when it goes).
Status DeviceMaskOf(mask::MaskState& mask, CUstream_st* stream, const uint32_t** idx,
                    const uint64_t** bits);

// The host part: all-reduces the nnz packed elements in place in packed.recv
// (packed.send == packed.recv, packed.count == nnz), on the progress thread.
using PackedCollective = std::function<Status(const coll::CollArgs& packed)>;

// Enqueues a masked all-reduce of the device buffers of `args` on `stream` and
// returns; `name` names it in messages. mask->idx must be non-empty.
Status EnqueueDevicePacked(Comm& comm, const char* name, const coll::CollArgs& args,
                           std::shared_ptr<mask::MaskState> mask, CUstream_st* stream,
                           PackedCollective host);

}  // namespace sieve::gpu

#endif  // SIEVE_GPU_DEVICE_MASKED_H_
