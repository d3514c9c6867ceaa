// The subnet all-reduces (SDP and D2FT) as a mode (coll/call.h): their
// parameters, and how one call runs. Host buffers only: staging would rewrite
// segments D2FT must leave untouched.
#ifndef SIEVE_SUBNET_SUBNET_MODE_H_
#define SIEVE_SUBNET_SUBNET_MODE_H_

#include <memory>
#include <vector>

#include "coll/call.h"
#include "subnet/layout_registry.h"
#include "subnet/quantized_group_codec.h"

namespace sieve::subnet {

struct SubnetParams : coll::ModeParams {
  std::shared_ptr<LayoutState> layout;  // registered on the call's communicator for its count
  // D2FT only (subnet_allreduce.h's AllReduceD2ft), copied from the caller: this
  // rank's touched bitmap, or the schedule table of every rank's.
  std::vector<unsigned char> touched;
  std::vector<unsigned char> schedule;
  // The quantized calls (sieveAllReduceSubnetQuantized, ...D2ftQuantized):
  // levels > 0. 0: the dense calls.
  GroupQuantization quant;
  bool error_feedback = false;  // quantized only: keep this rank's residual per buffer
};

// For core/collectives.def's SubnetAllReduce and D2ftAllReduce (dispatch/modes.cc).
const coll::Mode& SubnetMode();

}  // namespace sieve::subnet

#endif  // SIEVE_SUBNET_SUBNET_MODE_H_
