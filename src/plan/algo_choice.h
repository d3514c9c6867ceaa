// Which algorithm runs a collective, and why: one function per collective. Each
// depends only on the communicator (SIEVE_ALGO, SIEVE_TREE_THRESHOLD, size, host
// layout, the link's measured round trip and the rate its ranks agreed,
// plan/link_rate.h) and the call's size, so every rank chooses alike (the fingerprint carries
// the algorithm, and catches a rank that did not). Each logs its choice with the
// reason at INFO once per communicator, collective, algorithm and size class.
#ifndef SIEVE_PLAN_ALGO_CHOICE_H_
#define SIEVE_PLAN_ALGO_CHOICE_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "algo/allreduce.h"
#include "comm/comm.h"

namespace sieve::plan {

enum class Algo : uint8_t {
  kRing,     // reduce-scatter + all-gather around all ranks (algo/ring.h)
  kTree,     // reduce up and broadcast down a binary tree (algo/tree.h)
  kChain,    // a pipelined chain from or to the root (algo/chain.h)
  kHier,     // host reduce-scatter, inter-host all-reduce per local rank, host all-gather
  kDirect,   // reduce-scatter + all-gather with every rank at once (algo/direct.h)
  kOneShot,  // every rank's whole input to every rank, added everywhere (algo/one_shot.h)
  kOneShotValues,  // the quantized one-shot of values, no scale round (ternary/values_codec.h)
};
const char* AlgoName(Algo algo);

struct AlgoChoice {
  Algo algo = Algo::kRing;
  std::string why;  // for the INFO line: "at most SIEVE_TREE_THRESHOLD (65536) bytes on 3+ ranks"
  bool learned_rate = false;  // made at the rate the communicator learned (plan/link_rate.h)
};

// The dense all-reduce of `count` elements, `bytes` of them: hierarchical on a
// hierarchical layout (SIEVE_ALGO AUTO or HIER, at least one element per local
// rank, never on a view); else flat: on a local link (round trip below
// plan::kLocalRttS, plan/link_model.h) the tree for small calls on 3+ ranks
// (SIEVE_TREE_THRESHOLD) and the ring otherwise; on a link with latency the
// cheapest of ring, tree, direct and one-shot by the link model;
// SIEVE_ALGO=RING/TREE/DIRECT/ONESHOT forces. The dense, masked and ternary codecs
// have a one-shot (algo::Codec::OneShot); a subnet group's exchange takes the direct
// exchange where SIEVE_ALGO says ONESHOT.
AlgoChoice ChooseAllReduce(Comm& comm, size_t count, size_t bytes);

// The flat rule of the dense and masked all-reduces for `bytes` on the wire, not
// logged: what a call that did not take the hierarchical plan ran (auto's dense calls
// tell the rate learner, plan/link_rate.h). On a local link where SIEVE_LINK_RATE is
// unset, the rate the communicator learned (from its ternary, quantized and auto
// calls) decides the tree rule, as for the ternary all-reduce. On a link with latency
// the stated (else assumed) rate decides: there the learned one could move a call
// among ring, tree, direct and one-shot, whose scratch the direct device path
// reserves at enqueue (DenseFlatCandidates), before the calls queued ahead of it
// have run and changed what was learned.
AlgoChoice ChooseDenseFlat(Comm& comm, size_t bytes);

// Every flat algorithm a dense call of `bytes` may run when it reaches the front of
// the communicator's queue, whatever the calls queued ahead of it learn: where the LAN
// tree rule reads the learned rate, its picks at the slowest and the fastest rate that
// can be learned (the ring and the tree, unless SIEVE_ALGO forces one), else
// ChooseDenseFlat's one choice. The direct device path reserves scratch for each
// (gpu/direct_collectives.cc).
std::vector<Algo> DenseFlatCandidates(Comm& comm, size_t bytes);

// The masked all-reduce of `nnz` kept elements (`packed_bytes` packed): the dense
// rules on the packed vector (the hierarchical plan packs first).
AlgoChoice ChooseMaskedAllReduce(Comm& comm, size_t nnz, size_t packed_bytes);

// The ternary all-reduce of `elems` quantized elements: hierarchical as the dense
// all-reduce (dense sums inside hosts, quantized once between them) unless
// `flat_because` says why this call cannot take that plan (error feedback; a mask
// the codec gathers; codes quantized on the device), null when it can; else the
// flat rule (one-shot included) on the bytes a flat run puts on the wire (final
// sums' width, which grows with the call's levels L: TernaryBits(nL)). Where
// SIEVE_LINK_RATE is unset, the rate the communicator learned (plan/link_rate.h) decides.
// `values_allowed` (a host call that quantizes its own input on its own rank's
// stream): the one-shot of values where plan::ValuesOneShotPays (link_model.h), or
// where SIEVE_ALGO=ONESHOT_VALUES forces it. Where it loses by the learned rate alone
// (it would pay at the rate assumed when none is known), a call takes it anyway after
// kValuesProbeFirst such calls, then after twice as many each time a probe changed
// nothing (at most kValuesProbeLast), and again after kValuesProbeFirst once a call
// took it on its merits: the codes' calls of that size are too small to teach a
// rate (plan::kMinRateSampleBytes) and the values' are not, so bounds learned while
// TCP's windows were still opening (a communicator's first 32 KiB masked calls at
// 1 Gbit/s, 50 ms RTT: 76 and 50 ms where one delay is 25 ms, a bound of 0.03
// Gbit/s) do not keep small calls on the codes for good, while a link that really is
// slower pays for ever fewer probes. Every rank counts alike: the same calls, the same
// agreed rate.
constexpr uint64_t kValuesProbeFirst = 4;
constexpr uint64_t kValuesProbeLast = 256;
AlgoChoice ChooseTernaryAllReduce(Comm& comm, size_t elems, const char* flat_because,
                                  int levels = 1, bool values_allowed = false);

// A subnet group's exchange among `n` of comm's ranks, `bytes` each: the flat
// rule, but the ring where it says tree (groups interleave step by step, and the
// tree has no steps). Not logged (a layout has many groups).
AlgoChoice ChooseGroupExchange(const Comm& comm, int n, size_t bytes);

// How a flat choice (kRing, kTree, kDirect, kOneShot, kOneShotValues) runs: its OpAlgo, pieces of
// `segment_bytes`, and the bytes in flight the link needs (plan::InflightBytes).
algo::AllReduceRun FlatRun(const Comm& comm, Algo algo, size_t segment_bytes);

// The pipelined chain, the only algorithm of these collectives so far.
AlgoChoice ChooseBroadcast(Comm& comm, size_t bytes);
AlgoChoice ChooseReduce(Comm& comm, size_t bytes);
// The ring, the only algorithm of these collectives so far.
AlgoChoice ChooseAllGather(Comm& comm, size_t bytes);
AlgoChoice ChooseReduceScatter(Comm& comm, size_t bytes);

}  // namespace sieve::plan

#endif  // SIEVE_PLAN_ALGO_CHOICE_H_
