// The top-k sparsifying all-reduce on host buffers: every rank keeps its k
// largest-magnitude elements (topk_codec.h), the ranks all-gather their
// (index, value) pairs over the ring, and each rank sums every rank's pairs in
// rank order, so all ranks write the same bits. On the wire each rank sends
// (nranks - 1) * k * (4 + element size) bytes.
#ifndef SIEVE_TOPK_TOPK_ALLREDUCE_H_
#define SIEVE_TOPK_TOPK_ALLREDUCE_H_

#include "coll/collectives.h"
#include "comm/comm.h"

namespace sieve::topk {

struct TopkArgs {
  coll::CollArgs base;  // float32/float16/bfloat16, sum or avg; count <= kMaxCount
  double fraction = 1.0;  // (0, 1]: k = KeptElements(count, fraction)
  // Error feedback: this rank's residual of the buffer (count floats, kept by
  // the caller), added before the selection and updated after a success.
  bool error_feedback = false;
  float* residual = nullptr;  // set (count > 0) with error_feedback
};

Status TopkAllReduce(Comm& comm, const TopkArgs& args);

// The residual of the buffer (send, count, dtype): zeros when new. Kept with the
// communicator (Comm::State) for its life. Thread-safe.
float* ResidualFor(Comm& comm, const void* send, size_t count, int dtype);

}  // namespace sieve::topk

#endif  // SIEVE_TOPK_TOPK_ALLREDUCE_H_
