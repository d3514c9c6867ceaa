// The link's rate as a communicator learns it where SIEVE_LINK_RATE is unset: the one
// learner that both auto's choice of compression (ternary/auto_levels.h) and the
// algorithm choice (plan/algo_choice.h: the ring's pipelined estimate, the tree rule
// on a LAN) read. SIEVE_LINK_RATE, where set, overrides it everywhere.
//
// A measurement is one call in which this rank sent `sent` bytes in `seconds` (from
// before its first send to after its last receive): RateBoundOf inverts the least time
// the call's algorithm can take at a rate (LeastSeconds), or gives 0 where the call
// proves nothing. No one rank's value is a bound (a rank that began late found bytes
// waiting), but the smallest over all ranks is, and that is what the ranks agree on;
// so every value the learner holds is a proven lower bound on the rate: a choice of
// compression made at it errs only toward compression (auto's cheap mistake), and a
// loaded host only makes it pessimistic, never wrong.
//
// Agreement: each rank proposes the largest value its calls gave since the last
// agreement; the proposals travel with a ternary call's first scale piece (4 bytes,
// ternary/ternary_scales.h) or in auto's agreement (ternary/auto_levels.h), and every
// rank adopts the smallest of them (none where some rank has none). The rate is the
// largest of the last kWindow agreed bounds: one call slowed by its host's load (a
// starved CPU, a communicator's first call starting TCP's windows) does not decide, and
// a link that got slower is followed once its older bounds leave the window.
#ifndef SIEVE_PLAN_LINK_RATE_H_
#define SIEVE_PLAN_LINK_RATE_H_

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

#include "algo/op_header.h"

namespace sieve::plan {

// The least time in which some rank of an all-reduce by `algo` on n ranks, having
// sent `sent` bytes (what this rank sent), can finish at rate `rate_Bps` over one-way
// delay a, pieces of `segment_bytes` on the wire (0: none). Every rank of these
// algorithms receives as many bytes as it sends, the rank whose call began first
// receives all of them after it began (its peers began later), the first no sooner
// than a; and the algorithm's chain of waits:
//   ring:     (2(n-1)-1) max(C, a + t) + C + a, C = sent/(2(n-1)) / r a step's chunk,
//             t = min(segment / r, C): its 2(n-1) chunks come in sequence over one link,
//             and each step's first piece waits for the previous step's
//             (plan/link_model.h's pipelined ring);
//   tree:     2 d a + sent / r (d = levels below the root): a deepest leaf's broadcast
//             waits for its own reduce, up and down the tree;
//   direct:   max(a + sent / r, 2 a + B / r), B = sent n / (2(n-1)) the call's bytes:
//             a rank's last reduce-scatter piece leaves it no sooner than (n-1) B/n / r
//             after it began, and the sum it joins comes back, B/n / r, a delay each way;
//   one-shot (of codes or of values): a + sent / r.
// The direct exchange and the one-shot receive from every peer at once: their first
// term takes a rank to receive no faster than it sends (full-duplex links of one rate;
// on a testbed that shapes only what a host sends, the peers' fair shares). Kernels,
// waits and a loaded host only add to a call's time, so the rate at which this is the
// call's time is at most the link's at the rank that began first; the smallest over
// the ranks is a lower bound.
double LeastSeconds(algo::OpAlgo algo, int n, double sent, double rate_Bps, double one_way_s,
                    size_t segment_bytes = 0);

// Calls that sent fewer bytes prove little (their delays dominate) and would only
// push better bounds out of the window.
constexpr uint64_t kMinRateSampleBytes = 32 << 10;

struct RateSample {
  algo::OpAlgo algo = algo::OpAlgo::kRing;  // what the call ran
  int nranks = 2;
  size_t segment_bytes = 0;  // the ring's pieces on the wire (0: none)
  // Every rank on its own host, or all on one: one kind of link (else some bytes
  // crossed shared memory and some the network).
  bool one_kind_of_link = true;
  uint64_t sent = 0;  // bytes this rank sent by the algorithm (a ternary call's scales aside)
  double seconds = 0;
  double one_way_s = 0;  // half the agreed round trip
  // A ternary call's scales went to every rank first, one delay before any rank's
  // first data (ternary/ternary_scales.h): its least time is one delay longer.
  bool scales_first = false;
};
// The one definition of a measurement: the rate r at which LeastSeconds is the call's
// time (at most kMaxLearnedRateBps), where it sent kMinRateSampleBytes or more over one
// kind of link; else 0, as where its time is within the delays alone (any rate would
// do: a small call on a long link).
constexpr double kMaxLearnedRateBps = 1.25e10;
double RateBoundOf(const RateSample& s);

// The bound every rank adopts from the ranks' proposals (the same list on every rank,
// 0 for none): the smallest, or 0 where some rank has none (or a value is not finite).
double AgreedBound(const std::vector<float>& proposals);

class LinkRate {
 public:
  static constexpr size_t kWindow = 8;
  // The largest of the last kWindow agreed bounds; 0: none yet. The same on every rank.
  double rate() const;
  // This rank's value from a call it ran (RateBoundOf); the proposal keeps the largest.
  void Offer(double bound);
  // What this rank proposes at the next agreement (0: none).
  double proposal() const;
  // After an agreement every rank heard: the agreed bound (0: none) enters the window
  // and this rank's proposal starts anew.
  void Agreed(double agreed);

  // Tests: this rank measures `bound` (0: nothing) from now on, whatever its calls
  // take, and the window forgets what was agreed before; agreements still run, so
  // ranks given different bounds still adopt the smallest.
  void SetMeasuredForTest(double bound);

 private:
  mutable std::mutex mu_;
  double window_[kWindow] = {};
  size_t next_ = 0;
  double proposal_ = 0;
  bool injected_ = false;
  double injected_bound_ = 0;
};

}  // namespace sieve::plan

#endif  // SIEVE_PLAN_LINK_RATE_H_
