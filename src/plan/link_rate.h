// The link's rate as a communicator learns it where SIEVE_LINK_RATE is unset: the one
// learner that both auto's choice of compression (ternary/auto_levels.h) and the
// algorithm choice (plan/algo_choice.h: the ring's pipelined estimate, the tree rule
// on a LAN) read. SIEVE_LINK_RATE, where set, overrides it everywhere.
//
// A measurement is one call in which this rank sent `sent` bytes in `seconds` (from
// before its first send to after its last receive) by a ring or a tree (RateBoundOf:
// sent / (seconds - one-way delay), or 0 where the call proves nothing). No one rank's
// value is a bound (a rank that began late found bytes waiting), but the smallest over
// all ranks is (RateLowerBound), and that is what the ranks agree on; so every value
// the learner holds is a proven lower bound on the rate: a choice made at it errs only
// toward compression (auto's cheap mistake), and a loaded host only makes it
// pessimistic, never wrong.
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

// The rate a call implies where this rank sent `bytes` in `seconds` by a ring or a tree:
// bytes / (seconds - one_way_s), 0 where that is not positive. Why the smallest over the
// ranks is a lower bound on the link's rate r: in the ring, the rank whose call began
// first receives as many bytes as it sends, every one of them sent after its call began
// (its neighbour began later) and the first arriving no sooner than one one-way delay
// later, so seconds >= one_way + bytes / r there; in the tree, a leaf's one receive (the
// broadcast) depends on its own send, so the same holds at every leaf. Kernels and
// transfers overlap in the pipelined ring, so the time less the kernels bounds nothing;
// waits and kernels only lower this value. (A ternary call's few scale bytes, to and
// from every peer, are counted with the ring's.)
double RateLowerBound(double bytes, double seconds, double one_way_s);

// Calls that sent fewer bytes prove little (their delays dominate) and would only
// push better bounds out of the window.
constexpr uint64_t kMinRateSampleBytes = 32 << 10;

struct RateSample {
  algo::OpAlgo algo = algo::OpAlgo::kRing;  // what the call ran
  // Every rank on its own host, or all on one: one kind of link (else some bytes
  // crossed shared memory and some the network).
  bool one_kind_of_link = true;
  uint64_t sent = 0;  // bytes this rank sent
  double seconds = 0;
  double one_way_s = 0;  // half the agreed round trip
};
// The one definition of a measurement: RateLowerBound of a call that ran a ring or a
// tree over one kind of link and sent kMinRateSampleBytes or more (the direct exchange
// and the one-shot receive from every peer at once); else 0.
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
