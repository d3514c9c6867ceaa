// Membership of a communicator that lost (or gains) ranks: who failed, agreed among the live
// ranks, and the exchange that starts a shrunk communicator. Both run over the parent's
// transport in their own tag space (transport/tag.h kMembershipSeq), beside whatever a failed
// collective left behind, and never wait on a rank known dead: a rank that an exchange does not
// keep is never waited for. DESIGN.md 1.7; docs/membership.md.
#ifndef SIEVE_COMM_MEMBERSHIP_H_
#define SIEVE_COMM_MEMBERSHIP_H_

#include <memory>
#include <vector>

#include "comm/comm.h"
#include "core/params.h"
#include "core/status.h"

namespace sieve::membership {

// Ranks of `comm` (not this one) whose connection failed or whose process is gone, as this rank
// sees them now, ascending. No message is exchanged.
std::vector<int> LocallyFailed(Comm& comm);

// Collective over the live ranks of `comm` (healthy or failed): every caller ends with the same
// ascending list of failed ranks, barring a failure during the call. Each rank sends what it
// knows (LocallyFailed, and whether its failure was a stall) to every other rank in two rounds
// and merges what it receives. A rank known dead is not waited for; one not heard from is
// counted failed after SIEVE_TIMEOUT without any message, or after `stall_grace_s` when some
// rank's failure was a stall (a frozen peer: the live ranks are all in this call by then).
// A rank that others count failed gets an error saying so.
Status AgreeFailed(Comm& comm, double stall_grace_s, std::vector<int>* failed);

// What the survivors of a shrink agreed on: the new communicator's size, this rank's place in it
// and the id of its bootstrap root (hosted by the lowest surviving rank).
struct ShrinkPlan {
  int new_size = 0;
  int new_rank = 0;
  char id[128] = {};
};

// The exchange before a shrink, among the ranks `exclude` leaves (sorted, unique, in range,
// without this rank: checked by the caller). Every kept rank sends its list to every other
// kept rank (and, best effort, to excluded ranks not known dead, so that a live one learns it was
// excluded); the lowest kept rank also starts the new bootstrap root and sends its id. Fails on
// every kept rank, naming the ranks and their lists, when the kept ranks' lists differ; fails
// when a kept rank dies or stays silent for SIEVE_TIMEOUT.
Status PlanShrink(Comm& parent, const std::vector<int>& exclude, ShrinkPlan* plan);

// A split of a revoked communicator (whose ranks may stand at different places of its call
// sequence, so the split's usual all-gather cannot run): every rank sends (color, key) to every
// other; the first member of each color by (key, rank) starts its bootstrap root and sends the
// id to its members. Every rank of `parent` must take part; one that failed fails the split
// naming it (shrink it away first). A bad color on any rank fails it on every rank.
struct SplitPlan {
  bool member = false;  // false: SIEVE_SPLIT_NOCOLOR
  int new_size = 0;
  int new_rank = 0;
  char id[128] = {};
};
Status PlanSplit(Comm& parent, int color, int key, int nocolor, SplitPlan* plan);

// A communicator made by a shrink or a grow: the parent's settings (`config`), without fault
// injection (SIEVE_FAULT rules name ranks of the parent, not of the new communicator), and its
// lineage, so handles of the parent are named as such when used on it.
Status JoinNew(const char id[128], int nranks, int rank, Config config, uint64_t parent_serial,
               std::unique_ptr<Comm>* out);

}  // namespace sieve::membership

#endif  // SIEVE_COMM_MEMBERSHIP_H_
