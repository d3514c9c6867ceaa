// Masked + ternary (DESIGN 1.3): the ternary all-reduce over the kept elements
// only (scales, Philox indices and bit widths all over packed positions), with
// zeros at the masked-out positions.
#ifndef SIEVE_MASK_MASKED_TERNARY_H_
#define SIEVE_MASK_MASKED_TERNARY_H_

#include "ternary/ternary_allreduce.h"
#include "mask/mask_registry.h"

namespace sieve::mask {

// args.base.count must equal mask.count (checked by the caller).
Status TernaryAllReduceMasked(Comm& comm, const coll::TernaryArgs& args, MaskState& mask);

// The same on a vector already packed by the mask (the device path packs and
// unpacks on the GPU): args.base.count == nnz > 0, in place. Scales, Philox
// indices and residuals are over packed positions either way, so this is the
// dense ternary all-reduce of the packed vector: the same fingerprint, plan
// and bits as TernaryAllReduceMasked.
Status TernaryAllReduceMaskedPacked(Comm& comm, const coll::TernaryArgs& args, MaskState& mask);

}  // namespace sieve::mask

#endif  // SIEVE_MASK_MASKED_TERNARY_H_
