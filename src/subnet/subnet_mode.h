// The subnet all-reduces (SDP and D2FT) as a mode (coll/call.h): their
// parameters, and how one call runs (host buffers, or device buffers staged
// with only the ranges the call writes copied back).
#ifndef SIEVE_SUBNET_SUBNET_MODE_H_
#define SIEVE_SUBNET_SUBNET_MODE_H_

#include <memory>
#include <vector>

#include "coll/call.h"
#include "mask/mask_registry.h"
#include "gpu/device_collectives.h"
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
  // Quantized only: the mask (null: none); its dropped elements neither travel nor
  // count, and are 0 in what the call writes.
  std::shared_ptr<mask::MaskState> mask;
};

// For core/collectives.def's SubnetAllReduce and D2ftAllReduce (dispatch/modes.cc).
const coll::Mode& SubnetMode();

// The ranges of recvbuff a subnet call writes on `rank`, adjacent ones merged:
// every segment it holds, or with `table` (D2FT's schedule: nranks rows of
// ceil(K/8) bytes) only those some rank touched.
std::vector<gpu::ElemRange> WrittenRanges(const LayoutState& layout, int rank, int nranks,
                                          const unsigned char* table);

}  // namespace sieve::subnet

#endif  // SIEVE_SUBNET_SUBNET_MODE_H_
