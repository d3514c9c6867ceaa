// The algorithm rules of plan/algo_choice.h and their INFO lines.
#include "plan/algo_choice.h"

#include <algorithm>

#include "algo/op_header.h"
#include "core/log.h"
#include "kernels/ternary.h"
#include "plan/link_probe.h"
#include "plan/link_rate.h"

namespace sieve::plan {

namespace {

using algo::OpKind;

AlgoChoice Logged(Comm& comm, OpKind kind, size_t bytes, AlgoChoice choice) {
  const char* what = algo::OpKindName(kind);
  // Keyed by the algorithm (and whether the rate was learned) too: calls of one size
  // class may choose differently.
  if (comm.FirstUse(std::string(what) + ": " + AlgoName(choice.algo) +
                        (choice.learned_rate ? " (learned rate)" : ""),
                    bytes))
    SIEVE_INFO(kLogColl, "%s of %zu bytes on %d ranks: %s (%s)", what, bytes, comm.size(),
               AlgoName(choice.algo), choice.why.c_str());
  return choice;
}

// The link the choice plans for: SIEVE_LINK_RATE's rate, else the rate this
// communicator learned (plan/link_rate.h: agreed, so the same on every rank), else
// none; *learned says whether it is the learned one.
Link LinkForChoice(Comm& comm, bool* learned) {
  Link link = LinkOf(comm);
  const double rate = comm.State<LinkRate>().rate();
  *learned = !(link.rate_Bps > 0) && rate > 0;
  if (*learned) link.rate_Bps = rate;
  return link;
}

// A choice made at the learned rate says so.
AlgoChoice AtLearnedRate(AlgoChoice choice, bool learned) {
  if (!learned) return choice;
  choice.why += "; rate learned by this communicator (a proven lower bound)";
  choice.learned_rate = true;
  return choice;
}

// Calls whose one-shot of values lost by the learned rate alone since the last probe
// (ChooseTernaryAllReduce), and how many make the next probe.
struct ValuesProbes {
  uint64_t lost_by_rate = 0;
  uint64_t interval = kValuesProbeFirst;
};

// Whether the one-shot of values replaces *flat, the codes' plan of model time codes_s at
// `link`, for `elems` elements: where plan::ValuesOneShotPays, or as a probe where it
// loses by the learned rate alone (algo_choice.h, ChooseTernaryAllReduce); codes_at
// gives the codes' plan's model time at another link. The reason joins flat's.
template <class CodesAt>
void ConsiderValuesOneShot(Comm& comm, size_t elems, const Link& link, bool learned,
                           double codes_s, const CodesAt& codes_at, AlgoChoice* flat) {
  // The values image: float32 values and the rank's rate proposal (ternary/values_codec.h);
  // its block abs-maxes (one float per block, 1/2048 of the values by default) left out.
  const size_t values = (elems + 1) * sizeof(float);
  double values_s = 0;
  bool pays = ValuesOneShotPays(comm.size(), values, link, codes_s, &values_s);
  const char* probe = "";
  ValuesProbes& probes = comm.State<ValuesProbes>();
  if (pays) probes = ValuesProbes{};  // on its merits: the wait starts again
  if (!pays && learned) {  // lost by the learned rate alone: probe now and then
    Link assumed = link;
    assumed.rate_Bps = 0;
    double assumed_s = 0;
    if (ValuesOneShotPays(comm.size(), values, assumed, codes_at(assumed), &assumed_s) &&
        ++probes.lost_by_rate == probes.interval) {
      pays = true;
      probe = " (a probe: it pays at the rate assumed when none is known)";
      probes.lost_by_rate = 0;
      probes.interval = std::min(2 * probes.interval, kValuesProbeLast);
    }
  }
  if (pays)
    *flat = {Algo::kOneShotValues,
             StrFormat("%s; the one-shot of values %.3g ms%s against the scales' delay and %s, "
                       "%.3g ms",
                       flat->why.c_str(), values_s * 1e3, probe, AlgoName(flat->algo),
                       (link.rtt_s / 2 + codes_s) * 1e3)};
}

// Hierarchical, or why not (null): the layout's and SIEVE_ALGO's part of the rule.
const char* HierReason(const Comm& comm, size_t count) {
  const AlgoParam algo = comm.config().algo;
  if (algo != AlgoParam::kAuto && algo != AlgoParam::kHier) return nullptr;
  if (comm.is_view() || comm.host_view() == nullptr) return nullptr;
  if (count < static_cast<size_t>(comm.hosts().max_local)) return nullptr;
  return algo == AlgoParam::kHier ? "SIEVE_ALGO=HIER, hosts with the same number of ranks each"
                                  : "several hosts with the same number of ranks each";
}

Algo FromOpAlgo(algo::OpAlgo a) {
  switch (a) {
    case algo::OpAlgo::kTree:
      return Algo::kTree;
    case algo::OpAlgo::kDirect:
      return Algo::kDirect;
    case algo::OpAlgo::kOneShot:
      return Algo::kOneShot;
    case algo::OpAlgo::kOneShotValues:
      return Algo::kOneShotValues;
    default:
      return Algo::kRing;
  }
}

// Ring, tree, direct or (where the mode's codec has it: `one_shot`) one-shot
// among n ranks of comm for `bytes` on the wire, over `link` in pipelining
// segments of `segment_wire` bytes (0: SIEVE_SEGMENT_BYTES); `one_shot_image` as
// ChooseForLink's (a segmented one-shot of smaller images than `bytes`).
AlgoChoice Flat(const Comm& comm, int n, size_t bytes, bool one_shot, const Link& link,
                size_t segment_wire = 0, size_t one_shot_image = 0, double* pick_s = nullptr) {
  const Config& config = comm.config();
  if (config.algo == AlgoParam::kRing) return {Algo::kRing, "SIEVE_ALGO=RING"};
  if (config.algo == AlgoParam::kTree) return {Algo::kTree, "SIEVE_ALGO=TREE"};
  if (config.algo == AlgoParam::kDirect) return {Algo::kDirect, "SIEVE_ALGO=DIRECT"};
  if (config.algo == AlgoParam::kOneShot || config.algo == AlgoParam::kOneShotValues) {
    const char* forced =
        config.algo == AlgoParam::kOneShot ? "SIEVE_ALGO=ONESHOT" : "SIEVE_ALGO=ONESHOT_VALUES";
    return one_shot ? AlgoChoice{Algo::kOneShot, forced}
                    : AlgoChoice{Algo::kDirect, StrFormat("%s; this mode has no one-shot", forced)};
  }
  if (segment_wire == 0) segment_wire = config.segment_bytes;
  if (LatencyMatters(link)) {
    AlgoChoice c;
    c.algo = FromOpAlgo(
        ChooseForLink(n, bytes, link, &c.why, one_shot ? config.segment_bytes : 0, segment_wire,
                      one_shot ? one_shot_image : 0, pick_s));
    return c;
  }
  if (n < 3) return {Algo::kRing, "fewer than 3 ranks"};
  if (bytes <= config.tree_threshold) {
    if (!TreeOnLan(n, bytes, link))
      return {Algo::kRing,
              StrFormat("at most SIEVE_TREE_THRESHOLD (%zu) bytes, but at %.3g Gbit/s%s the "
                        "tree's extra bytes cost more than its two fewer steps",
                        config.tree_threshold, RateOr(link, kChoiceRateBps) * 8e-9,
                        link.rate_Bps > 0 ? "" : " (rate unknown, assumed)")};
    return {Algo::kTree, StrFormat("at most SIEVE_TREE_THRESHOLD (%zu) bytes on 3 or more ranks",
                                   config.tree_threshold)};
  }
  return {Algo::kRing,
          StrFormat("more than SIEVE_TREE_THRESHOLD (%zu) bytes", config.tree_threshold)};
}

}  // namespace

const char* AlgoName(Algo algo) {
  switch (algo) {
    case Algo::kRing:
      return "ring";
    case Algo::kTree:
      return "tree";
    case Algo::kChain:
      return "pipelined chain";
    case Algo::kHier:
      return "hierarchical";
    case Algo::kDirect:
      return "direct";
    case Algo::kOneShot:
      return "one-shot";
    case Algo::kOneShotValues:
      return "one-shot of values";
  }
  return "?";
}

AlgoChoice ChooseAllReduce(Comm& comm, size_t count, size_t bytes) {
  if (const char* hier = HierReason(comm, count))
    return Logged(comm, OpKind::kAllReduce, bytes,
                  {Algo::kHier, StrFormat("%s: host reduce-scatter, inter-host all-reduce per "
                                          "local rank, host all-gather",
                                          hier)});
  return Logged(comm, OpKind::kAllReduce, bytes, ChooseDenseFlat(comm, bytes));
}

AlgoChoice ChooseDenseFlat(Comm& comm, size_t bytes) {
  // On a link with latency the stated or assumed rate decides (algo_choice.h).
  const Link stated = LinkOf(comm);
  if (LatencyMatters(stated)) return Flat(comm, comm.size(), bytes, true, stated);
  bool learned = false;
  const Link link = LinkForChoice(comm, &learned);
  return AtLearnedRate(Flat(comm, comm.size(), bytes, true, link), learned);
}

std::vector<Algo> DenseFlatCandidates(Comm& comm, size_t bytes) {
  std::vector<Algo> out = {ChooseDenseFlat(comm, bytes).algo};
  const Link stated = LinkOf(comm);
  if (stated.rate_Bps > 0 || LatencyMatters(stated)) return out;  // no learned rate read
  // The LAN rule at the slowest and the fastest rate the communicator can learn bounds
  // what it may pick by then: the faster the link, the cheaper the tree's extra bytes.
  for (double rate : {1.0, kMaxLearnedRateBps}) {
    Link at = stated;
    at.rate_Bps = rate;
    const Algo algo = Flat(comm, comm.size(), bytes, true, at).algo;
    if (std::find(out.begin(), out.end(), algo) == out.end()) out.push_back(algo);
  }
  return out;
}

AlgoChoice ChooseMaskedAllReduce(Comm& comm, size_t nnz, size_t packed_bytes) {
  if (const char* hier = HierReason(comm, nnz))
    return Logged(comm, OpKind::kMaskedAllReduce, packed_bytes,
                  {Algo::kHier, StrFormat("%s: packed once, the dense hierarchical all-reduce "
                                          "of the kept elements, unpacked once",
                                          hier)});
  return Logged(comm, OpKind::kMaskedAllReduce, packed_bytes, ChooseDenseFlat(comm, packed_bytes));
}

AlgoChoice ChooseTernaryAllReduce(Comm& comm, size_t elems, const char* flat_because, int levels,
                                  bool values_allowed) {
  const size_t wire_bytes =
      kernels::TernaryPackedBytes(elems, kernels::TernaryBits(comm.size() * levels));
  const char* hier = HierReason(comm, elems);
  if (hier != nullptr && flat_because == nullptr)
    return Logged(comm, OpKind::kTernaryAllReduce, wire_bytes,
                  {Algo::kHier, StrFormat("%s: dense sums inside hosts, quantized once between "
                                          "hosts",
                                          hier)});
  bool learned = false;
  const Link link = LinkForChoice(comm, &learned);
  // A segment on the wire holds as many elements as a float32 input's segment.
  const size_t segment_wire = kernels::TernaryPackedBytes(
      comm.config().segment_bytes / sizeof(float), kernels::TernaryBits(comm.size() * levels));
  // The one-shot sends each rank's codes (TernaryBits(levels)), in segments.
  const size_t codes = kernels::TernaryPackedBytes(elems, kernels::TernaryBits(levels));
  double codes_s = -1;  // set where the link model chose
  AlgoChoice flat = Flat(comm, comm.size(), wire_bytes, true, link, segment_wire, codes, &codes_s);
  if (values_allowed && comm.config().algo == AlgoParam::kOneShotValues) {
    flat = {Algo::kOneShotValues, "SIEVE_ALGO=ONESHOT_VALUES"};
  } else if (values_allowed && codes_s >= 0) {
    // The codes' plan at another rate: Flat again, as above.
    const auto codes_at = [&](const Link& other) {
      double other_s = 0;
      Flat(comm, comm.size(), wire_bytes, true, other, segment_wire, codes, &other_s);
      return other_s;
    };
    ConsiderValuesOneShot(comm, elems, link, learned, codes_s, codes_at, &flat);
  }
  if (hier != nullptr) flat.why += StrFormat("; not hierarchical: %s", flat_because);
  return Logged(comm, OpKind::kTernaryAllReduce, wire_bytes,
                AtLearnedRate(std::move(flat), learned));
}

AlgoChoice ChooseGroupExchange(const Comm& comm, int n, size_t bytes) {
  AlgoChoice c = Flat(comm, n, bytes, false, LinkOf(comm));
  if (c.algo == Algo::kTree) {
    c.algo = Algo::kRing;
    c.why += "; the ring, as a group's exchange interleaves step by step";
  }
  return c;
}

algo::AllReduceRun FlatRun(const Comm& comm, Algo algo, size_t segment_bytes) {
  algo::AllReduceRun run;
  run.algo = algo == Algo::kTree            ? algo::OpAlgo::kTree
             : algo == Algo::kDirect        ? algo::OpAlgo::kDirect
             : algo == Algo::kOneShot       ? algo::OpAlgo::kOneShot
             : algo == Algo::kOneShotValues ? algo::OpAlgo::kOneShotValues
                                            : algo::OpAlgo::kRing;
  run.segment_bytes = segment_bytes;
  run.inflight_bytes = InflightBytes(LinkOf(comm), segment_bytes);
  return run;
}

AlgoChoice ChooseBroadcast(Comm& comm, size_t bytes) {
  return Logged(comm, OpKind::kBroadcast, bytes, {Algo::kChain, "the only broadcast algorithm"});
}

AlgoChoice ChooseReduce(Comm& comm, size_t bytes) {
  return Logged(comm, OpKind::kReduce, bytes, {Algo::kChain, "the only reduce algorithm"});
}

AlgoChoice ChooseAllGather(Comm& comm, size_t bytes) {
  return Logged(comm, OpKind::kAllGather, bytes, {Algo::kRing, "the only allgather algorithm"});
}

AlgoChoice ChooseReduceScatter(Comm& comm, size_t bytes) {
  return Logged(comm, OpKind::kReduceScatter, bytes,
                {Algo::kRing, "the only reducescatter algorithm"});
}

}  // namespace sieve::plan
