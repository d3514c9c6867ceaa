// The top-k all-reduce as a mode (coll/call.h): its parameters and how a call
// runs on host buffers. Device buffers are refused for now.
#ifndef SIEVE_TOPK_TOPK_MODE_H_
#define SIEVE_TOPK_TOPK_MODE_H_

#include "coll/call.h"

namespace sieve::topk {

struct TopkParams : coll::ModeParams {
  double fraction = 1.0;  // (0, 1], checked by api/
  bool error_feedback = false;
};

// For core/collectives.def's TopkAllReduce (dispatch/modes.cc).
const coll::Mode& TopkMode();

}  // namespace sieve::topk

#endif  // SIEVE_TOPK_TOPK_MODE_H_
