// The subnet all-reduces as plans over Exchange: SDP runs the layout's
// precomputed plan; D2FT learns every rank's touched bitmap (an all-gather of
// K bits, or the caller's schedule table) and runs the plan cached for that
// pattern. Arguments are already checked by api/.
#ifndef SIEVE_SUBNET_SUBNET_ALLREDUCE_H_
#define SIEVE_SUBNET_SUBNET_ALLREDUCE_H_

#include <vector>

#include "comm/comm.h"
#include "subnet/layout_registry.h"
#include "subnet/subnet_exchange.h"

namespace sieve::subnet {

// recvbuff = average over the holders on every held segment; nothing else.
Status AllReduceSubnet(Comm& comm, const ExchangeArgs& args, LayoutState& layout);

// touched: this rank's bitmap (ceil(K/8) bytes; ignored when schedule is
// given). schedule: empty, or nranks rows of ceil(K/8) bytes, the same on
// every rank (hash-checked when SIEVE_CHECK_SCHEDULE=1).
Status AllReduceD2ft(Comm& comm, const ExchangeArgs& args, LayoutState& layout,
                     const std::vector<unsigned char>& touched,
                     const std::vector<unsigned char>& schedule);

// The D2FT plan of a schedule table (bits past K ignored): contributors of
// segment k are the ranks whose row has bit k set, receivers its other
// holders. Fails, naming them, when a rank marks a segment it does not hold.
Status BuildD2ftPlan(const LayoutState& layout, int nranks, const std::vector<unsigned char>& table,
                     Plan* plan);

}  // namespace sieve::subnet

#endif  // SIEVE_SUBNET_SUBNET_ALLREDUCE_H_
