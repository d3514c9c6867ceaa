// How a subnet or D2FT all-reduce call runs.
#include "subnet/subnet_mode.h"

#include "subnet/subnet_allreduce.h"

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
