// The mask tracker (automatic masked mode, DESIGN 1.2): plain all-reduces on a
// buffer whose zero pattern stays the same switch to the masked all-reduce once
// every rank agrees; a step where any rank has a non-zero outside the mask is
// done dense (nothing is lost) and the mask is learned again.
#ifndef SIEVE_MASK_MASK_TRACKER_H_
#define SIEVE_MASK_MASK_TRACKER_H_

#include "coll/collectives.h"

namespace sieve::mask {

// sieveAllReduce's entry: the dense all-reduce, or the tracker when the
// communicator has SIEVE_AUTO_MASK=1 (or the NCCL shim's auto-mask mode).
//
// Per tracked call every rank first all-reduces 3 bytes (max) saying whether it
// is in masked state, whether it is not (so a disagreement shows), and whether
// its pattern is unstable (learning) or has a stray non-zero (masked). All
// transitions follow that agreed answer, so every rank issues the same
// collectives. Buffers are told apart by (address, count, datatype, op).
Status TrackedAllReduce(Comm& comm, const coll::CollArgs& args);

}  // namespace sieve::mask

#endif  // SIEVE_MASK_MASK_TRACKER_H_
