// The masked all-reduce as a plan: the dense ring or tree over the packed
// vector with the MaskedCodec, then one unpack pass with zero-fill.
#ifndef SIEVE_MASK_MASKED_ALLREDUCE_H_
#define SIEVE_MASK_MASKED_ALLREDUCE_H_

#include "coll/collectives.h"
#include "mask/mask_registry.h"

namespace sieve::mask {

// args.count must equal mask.count (checked by the caller). In place when
// args.send == args.recv.
Status AllReduceMasked(Comm& comm, const coll::CollArgs& args, MaskState& mask);

// The network part of AllReduceMasked on a vector already packed by the mask
// (the device path packs and unpacks on the GPU): packed.count == nnz > 0, in
// place in packed.recv. The same ring/tree/hierarchical plan, fingerprint and
// codec arithmetic as AllReduceMasked, so ranks on either path interoperate
// and the kept elements come out bit for bit the same.
Status AllReduceMaskedPacked(Comm& comm, const coll::CollArgs& packed, MaskState& mask);

}  // namespace sieve::mask

#endif  // SIEVE_MASK_MASKED_ALLREDUCE_H_
