// The registration of the modes: which coll::Mode runs each kind of call of
// core/collectives.def. A new mode (a codec with its plan, in its own folder)
// registers here with one line.
#ifndef SIEVE_DISPATCH_MODES_H_
#define SIEVE_DISPATCH_MODES_H_

#include "coll/call.h"
#include "comm/group.h"

namespace sieve::dispatch {

// The mode of `kind`; the kinds that are only steps of other calls (a mask
// union) have none an entry point could reach, and get one that says so.
const coll::Mode& ModeOf(algo::OpKind kind);

// How sends and receives on device buffers are enqueued (gpu/device_p2p.h).
P2pOp::DeviceBatch DeviceSendRecv();

}  // namespace sieve::dispatch

#endif  // SIEVE_DISPATCH_MODES_H_
