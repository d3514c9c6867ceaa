// Measures the round trip between a new communicator's ranks, so the plan can
// choose and size for the link (plan/link_model.h), and agrees on one value,
// since every rank must make the same choice.
#ifndef SIEVE_PLAN_LINK_PROBE_H_
#define SIEVE_PLAN_LINK_PROBE_H_

#include "comm/comm.h"
#include "plan/link_model.h"

namespace sieve::plan {

// Sets comm.link_rtt_s(): SIEVE_LINK_RTT when set (measured anyway where the
// ranks span hosts, so every rank takes part alike); else, where the ranks span
// hosts, the smallest over ranks of each rank's median round trip to up to 8
// neighbours (best of 5 pings each, then a min-dissemination in log2(n) steps);
// else 0 (one host). The median sees a remote site among the neighbours; the
// best-of and the minimum keep a loaded machine's scheduling delays (which only
// ever add) from making a LAN look like a WAN. Tiny messages on the
// point-to-point tag space, not counted as traffic or collectives. Called on
// every rank at init.
Status ProbeLink(Comm& comm);

// The link as the plan sees it: the round trip above and SIEVE_LINK_RATE.
Link LinkOf(const Comm& comm);

}  // namespace sieve::plan

#endif  // SIEVE_PLAN_LINK_PROBE_H_
