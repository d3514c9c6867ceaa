#include "algo/allreduce.h"

#include "algo/direct.h"
#include "algo/one_shot.h"
#include "algo/ring.h"
#include "algo/ring_pattern.h"
#include "algo/tree.h"

namespace sieve::algo {

Status RunAllReduce(Channel& ch, Codec& codec, size_t count, const AllReduceRun& run) {
  switch (run.algo) {
    case OpAlgo::kTree:
      return RunTree(ch, codec, count, run.segment_bytes);
    case OpAlgo::kDirect: {
      DirectOptions options;
      options.segment_bytes = run.segment_bytes;
      options.inflight_bytes = run.inflight_bytes;
      return RunDirect(ch, codec, BalancedSplit(count, ch.size()), options);
    }
    case OpAlgo::kOneShot:
      return RunOneShot(ch, codec, count, run.segment_bytes);
    case OpAlgo::kOneShotValues:  // one message per peer: a block's scale needs all of it
      return RunOneShot(ch, codec, count, 0);
    case OpAlgo::kRing: {
      RingOptions options;
      options.segment_bytes = run.segment_bytes;
      options.inflight_bytes = run.inflight_bytes;
      return RunRing(ch, codec, BalancedSplit(count, ch.size()), options);
    }
    case OpAlgo::kChain:
    case OpAlgo::kHier:  // coll/hier.cc: steps on the host and cross views
      break;
  }
  return Status::Internal(StrFormat("no all-reduce algorithm '%s'", OpAlgoName(run.algo)));
}

std::unique_ptr<AllReduceSteps> MakeSteps(Channel& ch, Codec& codec, std::vector<size_t> bounds,
                                          const AllReduceRun& run) {
  if (run.algo == OpAlgo::kDirect) {
    DirectOptions options;
    options.segment_bytes = run.segment_bytes;
    options.inflight_bytes = run.inflight_bytes;
    return std::make_unique<Direct>(ch, codec, std::move(bounds), options);
  }
  RingOptions options;
  options.segment_bytes = run.segment_bytes;
  options.inflight_bytes = run.inflight_bytes;
  return std::make_unique<Ring>(ch, codec, std::move(bounds), options);
}

}  // namespace sieve::algo
