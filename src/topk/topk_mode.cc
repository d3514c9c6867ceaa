// How a top-k all-reduce call runs: the host plan, with the caller's buffer's
// residual when error feedback is on.
#include "topk/topk_mode.h"

#include "topk/topk_allreduce.h"

namespace sieve::topk {

namespace {

Status RunOnHost(Comm& comm, const coll::Call& call) {
  const TopkParams& p = call.Params<TopkParams>();
  TopkArgs args;
  args.base = call.args;
  args.fraction = p.fraction;
  args.error_feedback = p.error_feedback;
  if (p.error_feedback)
    args.residual = ResidualFor(comm, call.args.send, call.args.count,
                                static_cast<int>(call.args.dtype));
  return TopkAllReduce(comm, args);
}

const coll::Mode kTopk = {&RunOnHost, nullptr, "does not take device buffers yet; pass host buffers"};

}  // namespace

const coll::Mode& TopkMode() { return kTopk; }

}  // namespace sieve::topk
