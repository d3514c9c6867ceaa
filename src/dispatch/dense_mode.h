// The plain collectives as a mode (coll/call.h): broadcast, reduce, all-gather,
// reduce-scatter and sieveAllReduce. On host buffers their coll/ plans — and for
// sieveAllReduce the modes the communicator's configuration asks for
// (SIEVE_AUTO_MASK; the NCCL shim's SIEVE_NCCL_MODE: the mask tracker, ternary
// or L levels, or both; and the quantized reduce-scatter and all-gather:
// shim_compression.h). On device buffers direct or staged in chunks, as
// plan::ChooseDenseOnDevice says; a configured mode stages the whole buffer.
#ifndef SIEVE_DISPATCH_DENSE_MODE_H_
#define SIEVE_DISPATCH_DENSE_MODE_H_

#include "coll/call.h"

namespace sieve::dispatch {

const coll::Mode& DenseMode();

}  // namespace sieve::dispatch

#endif  // SIEVE_DISPATCH_DENSE_MODE_H_
