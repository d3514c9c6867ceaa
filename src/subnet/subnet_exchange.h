// Runs a subnet plan: for every group this rank belongs to, a ring among the
// group's senders (the existing ring over a SubnetCodec, or a
// QuantizedGroupCodec at L levels, on a channel restricted to them) averages
// its ranges; then each sender passes its chunk
// of the result to the group's receivers (in the datatype, or for a quantized
// group as its final sums and scales: quantized_fan.h). Ranks outside a group neither send,
// receive, read nor write anything of it.
#ifndef SIEVE_SUBNET_SUBNET_EXCHANGE_H_
#define SIEVE_SUBNET_SUBNET_EXCHANGE_H_

#include "comm/comm.h"
#include "kernels/dtype.h"
#include "mask/mask_registry.h"
#include "subnet/quantized_group_codec.h"
#include "subnet/subnet_plan.h"

namespace sieve::subnet {

struct ExchangeArgs {
  const void* send = nullptr;
  void* recv = nullptr;
  kernels::DType dtype = kernels::DType::kFloat32;
  const char* what = "subnet allreduce";  // names the operation in errors and logs
  // levels > 0: every group of two or more senders runs its ring at L levels
  // (quantized_group_codec.h); a group with one sender moves its input as it is.
  GroupQuantization quant;
  // Error feedback (quantized only): this rank's residual of every buffer position;
  // a quantized group's ring reads and updates its elements', the rest stay.
  float* residual = nullptr;
  // A mask (quantized only; null: none): the caller's plan is cut to its kept
  // elements (masked_plan.h) and the dropped ones the call writes are zeroed.
  const mask::MaskState* mask = nullptr;
};

// Collective over comm: every rank passes the same plan. Groups are numbered
// in the plan's one global order (which fixes their tags); all groups of a
// wave run at once and each ring advances whenever its next message is in,
// so no rank ever blocks on one group while another waits on it: no layout
// can deadlock. `control`: the call's channel with its fingerprint and
// verdict (Comm::MakeChannel(fp, seq)), watched while waiting so a peer that
// called something else fails this rank at once; the caller concludes it.
Status Exchange(Comm& comm, const Plan& plan, const ExchangeArgs& args,
                algo::Channel* control = nullptr);

}  // namespace sieve::subnet

#endif  // SIEVE_SUBNET_SUBNET_EXCHANGE_H_
