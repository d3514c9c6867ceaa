// Masked + ternary (DESIGN 1.3): pack the kept elements, run the ternary
// all-reduce on the packed vector (scales, Philox indices and bit widths all
// over packed elements), unpack with zero-fill of the masked-out positions.
#ifndef SIEVE_MASK_MASKED_TERNARY_H_
#define SIEVE_MASK_MASKED_TERNARY_H_

#include "coll/ternary_allreduce.h"
#include "mask/mask_registry.h"

namespace sieve::mask {

// args.base.count must equal mask.count (checked by the caller).
Status TernaryAllReduceMasked(Comm& comm, const coll::TernaryArgs& args, MaskState& mask);

}  // namespace sieve::mask

#endif  // SIEVE_MASK_MASKED_TERNARY_H_
