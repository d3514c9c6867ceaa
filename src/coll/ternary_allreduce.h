// The ternary all-reduce as a plan (DESIGN.md 1.3): agree on block scales with
// a dense all-reduce-max, run the ring or tree with the TernaryCodec, then one
// dequantize pass into recvbuff. Arguments are already checked by api/.
#ifndef SIEVE_COLL_TERNARY_ALLREDUCE_H_
#define SIEVE_COLL_TERNARY_ALLREDUCE_H_

#include <cstdint>

#include "coll/collectives.h"

namespace sieve::coll {

struct TernaryArgs {
  CollArgs base;  // dtype float32/float16/bfloat16, op sum or avg
  uint64_t seed = 0;
  uint64_t step = 0;
  size_t block = 2048;  // >= 1
  // Error feedback: this rank's residual, one float per element (nullptr: off).
  // Added to the input before quantizing and updated with what was dropped.
  float* residual = nullptr;
  // Philox rank key (-1: comm.rank()) and avg divisor (0: comm.size()): the
  // hierarchical all-reduce quantizes each host's slice as its owner's rank
  // and averages over every rank, not over the hosts.
  int rng_rank = -1;
  int divisor = 0;
};

// Hierarchical when coll::UseHier says so and error feedback is off: the host
// sums (exact up to the datatype's rounding) are quantized, once, for the
// inter-host step only.
Status TernaryAllReduce(Comm& comm, const TernaryArgs& args);

}  // namespace sieve::coll

#endif  // SIEVE_COLL_TERNARY_ALLREDUCE_H_
