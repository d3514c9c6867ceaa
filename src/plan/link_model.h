// The link between a communicator's ranks as the plan sees it (round trip and
// rate), and the pure functions that choose and size from it: which all-reduce
// algorithm, how many bytes in flight. No I/O: plan/link_probe.h measures the
// round trip, SIEVE_LINK_RTT / SIEVE_LINK_RATE may state both.
//
// The model of one all-reduce of B wire bytes on n ranks, with one-way delay
// a = rtt/2 and rate r (bytes/s), each rank sending 2(n-1)/n B in the ring and
// the direct exchange and up to 3B in the binary tree (up once, down to two):
//   ring:   2(n-1) a + 2(n-1)/n B / r     (each step waits for the previous one's data)
//     where the rate is known (stated, or learned: plan/link_rate.h), the pipelined ring instead:
//           (2(n-1)-1) max(C, a + t) + C + a, with C = B/(n r) a step's chunk time
//           and t = a segment's: a step starts when the previous step's first
//           segment is in, so a ring whose chunks take longer than a delay keeps
//           its link busy and pays one delay in all (measured at 100 Mbit/s, 50 ms,
//           4 ranks, 16 MiB ternary: the ring 275 ms of data, the bound 371 ms)
//   tree:   2 d a    + 3 B / r            (d = levels below the root)
//   direct: 2 a      + 2(n-1)/n B / r     (everyone sends to everyone at once)
//   one-shot: a      + (n-1) B / r        (everyone sends its whole input to everyone)
// Where the round trip is below kLocalRttS the link counts as local and the size
// rule of a LAN decides as before (tree up to SIEVE_TREE_THRESHOLD on 3+ ranks,
// else ring), so nothing changes at ~0 RTT.
#ifndef SIEVE_PLAN_LINK_MODEL_H_
#define SIEVE_PLAN_LINK_MODEL_H_

#include <cstddef>
#include <string>

#include "algo/op_header.h"

namespace sieve::plan {

struct Link {
  double rtt_s = 0;     // round trip between two ranks; 0: local (or not measured)
  double rate_Bps = 0;  // bytes per second a rank sends; 0: unknown (kAssumedRateBps)
};

// Round trips below this are a LAN's (a data centre's are < 0.5 ms; 2 ms leaves
// room for a loaded host's scheduling): the latency terms do not decide.
constexpr double kLocalRttS = 2e-3;
// The rates assumed when none is known (SIEVE_LINK_RATE unset). Sizing the bytes
// in flight assumes a fast link (too many in flight costs only scratch memory);
// the choice assumes a slow one, so the direct exchange replaces the ring only
// where latency dominates even there (measured at 100 Mbit/s, 50 ms, 16 MiB on
// 4 ranks: the ring 2.2-2.3 s, the direct exchange 2.5-2.7 s: with 3 TCP flows
// per rank the tbf queue drops more), and a stated fast rate extends it to
// larger calls.
constexpr double kAssumedRateBps = 1.25e9;
constexpr double kChoiceRateBps = 1.25e7;

// The link's rate, or `assumed` where it is unknown (kChoiceRateBps for a choice).
double RateOr(const Link& link, double assumed);

// With the rate unknown, the direct exchange replaces the ring only where it is
// expected to save this much against the ring's bound (the ring is the proven
// choice; the model ignores per-message costs). With a known rate the pipelined
// ring's estimate is compared as it is.
constexpr double kDirectGain = 0.9;

// The one-shot all-reduce keeps every peer's whole input in scratch: only where
// those copies ((n-1) x B) stay below this.
constexpr size_t kMaxOneShotBytes = 8 << 20;

struct AllReduceEstimate {
  double ring_s = 0, tree_s = 0, direct_s = 0, one_shot_s = 0;
};
// `segment_bytes`: the ring's segment on the wire (0: none, t = 0). With the rate
// unknown the ring keeps its bound, which leaves the choice where it was before
// the rate could be learned (the direct exchange wherever latency may dominate).
// `one_shot_image`: the one-shot's image per peer (0: wire_bytes).
AllReduceEstimate EstimateAllReduce(int n, size_t wire_bytes, const Link& link,
                                    size_t segment_bytes = 0, size_t one_shot_image = 0);

// Levels of the binary tree below its root (algo/tree.h: children 2r+1, 2r+2).
int TreeDepth(int n);

// Whether the link's latency decides the flat all-reduce (round trip at least
// kLocalRttS); below, plan/algo_choice.h keeps the LAN's size rule.
bool LatencyMatters(const Link& link);

// The flat all-reduce on a link with latency: the model's cheapest of kRing,
// kTree (3+ ranks), kDirect (where it saves kDirectGain over the ring) and
// kOneShot for `wire_bytes` on n >= 2 ranks; in *why the reason for the INFO line.
// The one-shot only where the codec offers it, with `one_shot_max` its largest
// message (0: none; the segment size, so that its one message per peer goes
// eagerly like the ring's pieces: a rendezvous would cost a round trip), and
// its copies ((n-1) x wire_bytes) within kMaxOneShotBytes.
// `one_shot_image` > 0: the one-shot goes in segments (any size, one_shot_max
// unused) and sends images of this many bytes, not wire_bytes (a compressed call
// sends its codes: the ternary one's are half its 4-rank sums); it replaces the
// best of the others only where it saves kDirectGain against it and against the
// direct exchange at that call's own bytes ((n-1)/n x (codes + sums)): it puts
// more bytes on the link (4 ranks, ternary: 3 x codes against 2.25 x), so it
// pays only where a delay is worth more than those (16 MiB on 4 ranks at 50 ms:
// above ~0.4 Gbit/s).
// `pick_s`, when set, gets the model's time of the pick.
algo::OpAlgo ChooseForLink(int n, size_t wire_bytes, const Link& link, std::string* why,
                           size_t one_shot_max = 0, size_t segment_bytes = 0,
                           size_t one_shot_image = 0, double* pick_s = nullptr);

// The quantized all-reduce's one-shot of values (ternary/values_codec.h): every rank
// sends its `value_bytes` (float32 values) to every other and quantizes all n itself,
// one delay, against a call that first agrees on the scales (one delay) and then runs
// the codes' plan of model time `codes_s` (ChooseForLink's pick_s). It pays where
//   a + (n-1) value_bytes / r < kDirectGain (a + codes_s)
// and its copies ((n-1) x value_bytes) stay within kMaxOneShotBytes: on 4 ranks with
// 50 ms RTT, ternary calls up to ~0.85 MiB of float32 at 1 Gbit/s and ~85 KiB at
// 100 Mbit/s. With the rate unknown, kChoiceRateBps. *values_s gets its model time.
bool ValuesOneShotPays(int n, size_t value_bytes, const Link& link, double codes_s,
                       double* values_s);

// On a LAN, whether the tree replaces the ring for `bytes` on n ranks (the caller
// checked SIEVE_TREE_THRESHOLD): unless its extra bytes (up to 3 B against the
// ring's 2(n-1)/n B) cost more than its fewer steps (kLanStepS each) save plus
// kLanTreeMarginS, at the link's rate or, unknown, at kChoiceRateBps (the slowest
// links Sieve is for, as the latency model assumes; a ring call then teaches a
// learning communicator the rate; the tree's leaves, sending a third of the bytes,
// often prove nothing: a 1 MiB masked ternary call on 4 ranks at 100 Mbit/s took the
// tree for good, 19.6 ms against the ring's ~8, before the tree rule assumed it): at 100
// Mbit/s a 64 KiB tree costs 8 ms more on the wire than the ring, at 1 Gbit/s
// 0.8 ms, where the tree still measured faster (0.67 against 0.95 ms, 4 ranks,
// 256 KiB ternary): the margin keeps rates learned from CPU-bound calls from moving
// fast links off the tree.
constexpr double kLanStepS = 100e-6;
constexpr double kLanTreeMarginS = 2e-3;
bool TreeOnLan(int n, size_t bytes, const Link& link);

// Bytes the ring or the direct exchange keeps in flight: the link's bandwidth-
// delay product (rate x rtt) plus two segments, so segments keep the link busy
// while earlier ones travel; never below the 2 MiB that a LAN needs, never
// above kMaxInflightBytes (scratch memory grows with it).
constexpr size_t kMinInflightBytes = 2 << 20;
constexpr size_t kMaxInflightBytes = 256 << 20;
size_t InflightBytes(const Link& link, size_t segment_bytes);

// Whether the ternary scales (an all-reduce-max of `scale_bytes` per rank) go in
// one exchange: every rank sends them to every other on the call's own channel,
// one one-way delay and no fingerprint or verdict round of their own, in pieces
// the ring starts on (ternary/ternary_scales.h), instead of a dense all-reduce's
// two or more delays, its fingerprints and its verdict before the ring's first
// byte. Wherever the copies stay small ((n-1) x scale_bytes <= kOneExchangeBytes):
// on a LAN too, as the ring no longer waits for every scale.
constexpr size_t kOneExchangeBytes = 1 << 20;
bool ScalesInOneExchange(int n, size_t scale_bytes, const Link& link);

}  // namespace sieve::plan

#endif  // SIEVE_PLAN_LINK_MODEL_H_
