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

AlgoChoice Logged(Comm& comm, OpKind kind, size_t bytes, AlgoChoice choice,
                  const char* variant = "") {
  const char* what = algo::OpKindName(kind);
  // Keyed by the algorithm (and `variant`) too: calls of one size class may choose
  // differently.
  if (comm.FirstUse(std::string(what) + ": " + AlgoName(choice.algo) + variant, bytes))
    SIEVE_INFO(kLogColl, "%s of %zu bytes on %d ranks: %s (%s)", what, bytes, comm.size(),
               AlgoName(choice.algo), choice.why.c_str());
  return choice;
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
    default:
      return Algo::kRing;
  }
}

// Ring, tree, direct or (where the mode's codec has it: `one_shot`) one-shot
// among n ranks of comm for `bytes` on the wire, over `link` in pipelining
// segments of `segment_wire` bytes (0: SIEVE_SEGMENT_BYTES).
AlgoChoice Flat(const Comm& comm, int n, size_t bytes, bool one_shot, const Link& link,
                size_t segment_wire = 0) {
  const Config& config = comm.config();
  if (config.algo == AlgoParam::kRing) return {Algo::kRing, "SIEVE_ALGO=RING"};
  if (config.algo == AlgoParam::kTree) return {Algo::kTree, "SIEVE_ALGO=TREE"};
  if (config.algo == AlgoParam::kDirect) return {Algo::kDirect, "SIEVE_ALGO=DIRECT"};
  if (config.algo == AlgoParam::kOneShot)
    return one_shot ? AlgoChoice{Algo::kOneShot, "SIEVE_ALGO=ONESHOT"}
                    : AlgoChoice{Algo::kDirect, "SIEVE_ALGO=ONESHOT; this mode has no one-shot"};
  if (segment_wire == 0) segment_wire = config.segment_bytes;
  if (LatencyMatters(link)) {
    AlgoChoice c;
    c.algo = FromOpAlgo(
        ChooseForLink(n, bytes, link, &c.why, one_shot ? config.segment_bytes : 0, segment_wire));
    return c;
  }
  if (n < 3) return {Algo::kRing, "fewer than 3 ranks"};
  if (bytes <= config.tree_threshold) {
    if (!TreeOnLan(n, bytes, link))
      return {Algo::kRing,
              StrFormat("at most SIEVE_TREE_THRESHOLD (%zu) bytes, but at %.3g Gbit/s the "
                        "tree's extra bytes cost more than its two fewer steps",
                        config.tree_threshold, link.rate_Bps * 8e-9)};
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

AlgoChoice ChooseDenseFlat(const Comm& comm, size_t bytes) {
  return Flat(comm, comm.size(), bytes, true, LinkOf(comm));
}

AlgoChoice ChooseMaskedAllReduce(Comm& comm, size_t nnz, size_t packed_bytes) {
  if (const char* hier = HierReason(comm, nnz))
    return Logged(comm, OpKind::kMaskedAllReduce, packed_bytes,
                  {Algo::kHier, StrFormat("%s: packed once, the dense hierarchical all-reduce "
                                          "of the kept elements, unpacked once",
                                          hier)});
  return Logged(comm, OpKind::kMaskedAllReduce, packed_bytes, ChooseDenseFlat(comm, packed_bytes));
}

AlgoChoice ChooseTernaryAllReduce(Comm& comm, size_t elems, const char* flat_because, int levels) {
  const size_t wire_bytes =
      kernels::TernaryPackedBytes(elems, kernels::TernaryBits(comm.size() * levels));
  const char* hier = HierReason(comm, elems);
  if (hier != nullptr && flat_because == nullptr)
    return Logged(comm, OpKind::kTernaryAllReduce, wire_bytes,
                  {Algo::kHier, StrFormat("%s: dense sums inside hosts, quantized once between "
                                          "hosts",
                                          hier)});
  Link link = LinkOf(comm);
  const double learned_rate = comm.State<LinkRate>().rate();
  const bool learned = !(link.rate_Bps > 0) && learned_rate > 0;
  if (learned) link.rate_Bps = learned_rate;
  // A segment on the wire holds as many elements as a float32 input's segment.
  const size_t segment_wire = kernels::TernaryPackedBytes(
      comm.config().segment_bytes / sizeof(float), kernels::TernaryBits(comm.size() * levels));
  AlgoChoice flat = Flat(comm, comm.size(), wire_bytes, true, link, segment_wire);
  if (hier != nullptr) flat.why += StrFormat("; not hierarchical: %s", flat_because);
  if (learned) flat.why += "; rate learned by this communicator (a proven lower bound)";
  return Logged(comm, OpKind::kTernaryAllReduce, wire_bytes, std::move(flat),
                learned ? " (learned rate)" : "");
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
  run.algo = algo == Algo::kTree      ? algo::OpAlgo::kTree
             : algo == Algo::kDirect  ? algo::OpAlgo::kDirect
             : algo == Algo::kOneShot ? algo::OpAlgo::kOneShot
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
