// What other entry points need of a sieveMask_t handle: the live-handle lookup
// that also checks the mask belongs to this communicator and count.
#ifndef SIEVE_API_MASK_HANDLE_H_
#define SIEVE_API_MASK_HANDLE_H_

#include <memory>

#include "comm/comm.h"
#include "mask/mask_registry.h"
#include "sieve.h"

namespace sieve {

// InvalidArgument when mask is NULL, not a live handle, registered on another
// communicator, or for another count; else writes its state.
Status CheckMaskUse(sieveMask_t mask, const Comm* impl, size_t count,
                    std::shared_ptr<mask::MaskState>* state);

}  // namespace sieve

#endif  // SIEVE_API_MASK_HANDLE_H_
