// The mask tracker (automatic masked mode, DESIGN 1.2): plain all-reduces on a
// buffer whose zero pattern stays the same switch to the masked all-reduce once
// every rank agrees; a step where any rank has a non-zero outside the mask is
// done dense (nothing is lost) and the mask is learned again.
#ifndef SIEVE_MASK_MASK_TRACKER_H_
#define SIEVE_MASK_MASK_TRACKER_H_

#include "coll/collectives.h"
#include "ternary/ternary_allreduce.h"

namespace sieve::mask {

// sieveAllReduce's entry: the dense all-reduce; the tracker when the
// communicator has SIEVE_AUTO_MASK=1; for a communicator served to NCCL,
// whatever SIEVE_NCCL_MODE asks (auto-mask, ternary for float/half/bfloat16
// sum/avg, or both).
Status ModeAllReduce(Comm& comm, const coll::CollArgs& args);

// The tracker itself. With `ternary`, the data steps are ternary all-reduces
// (masked ones over the kept elements) instead of exact ones.
//
// Per tracked call every rank first all-reduces 3 bytes (max) saying whether it
// is in masked state, whether it is not (so a disagreement shows), and whether
// its pattern is unstable (learning) or has a stray non-zero (masked). All
// transitions follow that agreed answer, so every rank issues the same
// collectives. Buffers are told apart by (address, count, datatype, op).
Status TrackedAllReduce(Comm& comm, const coll::CollArgs& args,
                        const coll::TernaryArgs* ternary = nullptr);

}  // namespace sieve::mask

#endif  // SIEVE_MASK_MASK_TRACKER_H_
