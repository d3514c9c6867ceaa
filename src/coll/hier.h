// The hierarchical all-reduce (several ranks on several hosts): reduce-scatter
// among the ranks of each host, all-reduce of each slice among the ranks with
// the same local index on every host (one inter-host ring per local rank, so
// every rank's NIC works), all-gather inside the host. Only the middle step
// crosses hosts, and only it uses a compressed mode.
#ifndef SIEVE_COLL_HIER_H_
#define SIEVE_COLL_HIER_H_

#include <functional>
#include <vector>

#include "coll/collectives.h"

namespace sieve::coll {

// Exchanges host identities (topo::HostIdentity, SIEVE_HOST_ID) with an
// all-gather over the new communicator and sets comm.hosts() and its views.
// Not counted as traffic or as a collective. One INFO line with the layout.
Status LearnHosts(Comm& comm);

// Slice boundaries (local ranks + 1 entries) over `count` elements, cut at
// multiples of `align` elements (1: balanced).
std::vector<size_t> HierBounds(size_t count, int parts, size_t align);

// The inter-host step on this rank's slice [offset, offset + count) of recv,
// which holds the host's combination (op sum for avg) on entry; it must leave
// the all-host result there (op avg: divided by comm.size() of the root).
// Called on every rank, even for an empty slice, and it must draw the same
// number of sequence numbers (collectives on `cross`) whatever the count.
using InterStep = std::function<Status(Comm& cross, void* slice, size_t offset, size_t count)>;

// Runs the three steps for a.send -> a.recv (a.op, a.dtype) with `bounds`. `call` is
// what every rank of comm must agree on (the whole call's fingerprint: count, mode,
// mask digest): the host and cross steps each compare only their view's ranks and
// their own slice, so the call exchanges it with every rank before the cross step and
// concludes with every rank's verdict.
Status HierAllReduce(Comm& comm, const CollArgs& a, algo::OpFingerprint call,
                     const std::vector<size_t>& bounds, const InterStep& inter);

// The dense hierarchical all-reduce (inter step: the flat all-reduce of the slice);
// `call` as above (the masked all-reduce passes its own, with the mask's digest).
Status HierDenseAllReduce(Comm& comm, const CollArgs& a, const algo::OpFingerprint& call);
// The dense all-reduce's fingerprint of a.
algo::OpFingerprint DenseAllReduceFingerprint(const CollArgs& a);

}  // namespace sieve::coll

#endif  // SIEVE_COLL_HIER_H_
