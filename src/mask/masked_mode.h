// The masked all-reduce as a mode (coll/call.h): its parameter, the registered
// mask, and how one call runs on host buffers or is enqueued on device buffers
// (packed on the device when libsieve has its kernels, else staged whole).
#ifndef SIEVE_MASK_MASKED_MODE_H_
#define SIEVE_MASK_MASKED_MODE_H_

#include <memory>

#include "coll/call.h"
#include "mask/mask_registry.h"

namespace sieve::mask {

struct MaskedParams : coll::ModeParams {
  std::shared_ptr<MaskState> mask;  // registered on the call's communicator for its count
};

// For core/collectives.def's MaskedAllReduce (dispatch/modes.cc).
const coll::Mode& MaskedMode();

}  // namespace sieve::mask

#endif  // SIEVE_MASK_MASKED_MODE_H_
