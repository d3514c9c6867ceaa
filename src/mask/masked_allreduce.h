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

}  // namespace sieve::mask

#endif  // SIEVE_MASK_MASKED_ALLREDUCE_H_
