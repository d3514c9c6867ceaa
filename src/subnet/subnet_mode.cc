// How a subnet or D2FT all-reduce call runs.
#include "subnet/subnet_mode.h"

#include "subnet/subnet_allreduce.h"
#include "ternary/residuals.h"

namespace sieve::subnet {

namespace {

Status RunOnHost(Comm& comm, const coll::Call& call) {
  const SubnetParams& p = call.Params<SubnetParams>();
  ExchangeArgs args;
  args.send = call.args.send;
  args.recv = call.args.recv;
  args.dtype = call.args.dtype;
  args.what = algo::OpKindName(call.kind);
  args.quant = p.quant;
  // One residual per buffer position, keyed by the layout as a mask keys ternary's: it
  // outlives the call's grouping, which D2FT changes with what is touched.
  if (p.error_feedback && p.quant.levels > 0)
    args.residual = ternary::HostResidualFor(comm, call.args.send, p.layout->count,
                                             static_cast<int>(call.args.dtype), p.layout.get(),
                                             p.layout->count);
  if (call.kind == algo::OpKind::kD2ftAllReduce)
    return AllReduceD2ft(comm, args, *p.layout, p.touched, p.schedule);
  return AllReduceSubnet(comm, args, *p.layout);
}

const coll::Mode kSubnet = {
    &RunOnHost, nullptr,
    "does not take device buffers yet (staging would rewrite segments D2FT must leave "
    "untouched); pass host buffers"};

}  // namespace

const coll::Mode& SubnetMode() { return kSubnet; }

}  // namespace sieve::subnet
