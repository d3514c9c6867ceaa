// The mask tracker (automatic masked mode, DESIGN 1.2): plain all-reduces on a
// buffer whose zero pattern stays the same switch to the masked all-reduce once
// every rank agrees; a step where any rank has a non-zero outside the mask is
// done dense (nothing is lost) and the mask is learned again.
#ifndef SIEVE_MASK_MASK_TRACKER_H_
#define SIEVE_MASK_MASK_TRACKER_H_

#include <functional>

#include "coll/collectives.h"
#include "mask/mask_registry.h"

namespace sieve::mask {

// One data step of a tracked all-reduce: over the mask's kept elements when
// `mask` is set (zeros elsewhere), else over the whole buffer.
using DataStep = std::function<Status(Comm& comm, const coll::CollArgs& args, MaskState* mask)>;
// The exact data step: the masked all-reduce, or the dense one.
Status ExactStep(Comm& comm, const coll::CollArgs& args, MaskState* mask);

// The tracker (SIEVE_AUTO_MASK, the shim's auto-mask modes; dispatch/ chooses it).
// Its data steps are `step`'s: exact ones, or another mode's (ternary/ passes
// ternary all-reduces, masked ones over the kept elements).
//
// Per tracked call every rank first all-reduces 3 bytes (max) saying whether it
// is in masked state, whether it is not (so a disagreement shows), and whether
// its pattern is unstable (learning) or has a stray non-zero (masked). All
// transitions follow that agreed answer, so every rank issues the same
// collectives. Buffers are told apart by (address, count, datatype, op).
Status TrackedAllReduce(Comm& comm, const coll::CollArgs& args, const DataStep& step);

}  // namespace sieve::mask

#endif  // SIEVE_MASK_MASK_TRACKER_H_
