// The ternary all-reduce as a mode (coll/call.h): its parameters, and how one
// call runs on host buffers or is enqueued on device buffers (the device route
// plan::ChooseTernaryOnDevice picks: the kernels on the stream, packed by the mask
// on the device, or the whole buffer staged and quantized on the host).
#ifndef SIEVE_TERNARY_TERNARY_MODE_H_
#define SIEVE_TERNARY_TERNARY_MODE_H_

#include <cstdint>
#include <memory>

#include "coll/call.h"
#include "mask/mask_registry.h"

namespace sieve::ternary {

struct TernaryParams : coll::ModeParams {
  int levels = 1;  // L in 1..kMaxLevels (1: ternary) or kLevelsAuto, checked by api/
  uint64_t seed = 0;
  uint64_t step = 0;
  size_t block = 2048;  // >= 1
  bool error_feedback = false;
  std::shared_ptr<mask::MaskState> mask;  // masked + ternary; null: dense
  // The caller's mask handle: with the buffer, what names its residual.
  const void* mask_handle = nullptr;
};

// For core/collectives.def's TernaryAllReduce (dispatch/modes.cc).
const coll::Mode& TernaryMode();

}  // namespace sieve::ternary

#endif  // SIEVE_TERNARY_TERNARY_MODE_H_
