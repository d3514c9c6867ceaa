// Command-line options of sieve-perf (nccl-tests flags) and the names of types, ops and
// collectives they refer to.
#ifndef SIEVE_BENCH_PERF_ARGS_H_
#define SIEVE_BENCH_PERF_ARGS_H_

#include <stddef.h>
#include <stdint.h>

#include <string>

#include "sieve.h"

namespace sieve {
namespace perf {

enum class Collective { kAllReduce, kBroadcast, kReduce, kAllGather, kReduceScatter, kSendRecv };

struct Options {
  size_t min_bytes = 32 << 20;
  size_t max_bytes = 32 << 20;
  double step_factor = 2;  // Used when step_bytes == 0.
  size_t step_bytes = 0;
  sieveDataType_t type = sieveFloat;
  sieveRedOp_t op = sieveSum;
  int root = 0;
  bool check = true;
  int iters = 20;
  int warmup = 5;
  Collective coll = Collective::kAllReduce;
  std::string json_path;
  std::string csv_path;
  bool masked = false;        // --mode masked: sieveAllReduceMasked with a random mask
  double mask_density = 1.0;  // --mask-density: fraction of elements the mask keeps
  bool auto_mask = false;     // --mode auto-mask: plain allreduce, zeros outside a random
                              // mask, with the library's mask tracker on (SIEVE_AUTO_MASK=1)
  bool ternary = false;       // --quant ternary: sieveAllReduceTernary (with the mask if masked);
                              // with -x reducescatter, sieveReduceScatterQuantized
  int levels = 1;             // --quant qL: sieveAllReduceQuantized at L levels (ternary set too);
                              // --quant auto: SIEVE_LEVELS_AUTO
  int gather_bits = 0;        // --quant int8/int4 with -x allgather: sieveAllGatherQuantized
  bool feedback = false;      // --feedback: the quantized calls keep error-feedback residuals
  double sdp_coverage = -1;   // --layout sdp:C: sieveAllReduceSubnet on a balanced random
                              // layout, each block held by about C*nranks ranks (-1: off)
  double d2ft_p = -1;         // --d2ft P: sieveAllReduceD2ft, each subnet touched by each rank
                              // with probability P (-1: off)

  bool subnet() const { return sdp_coverage >= 0 || d2ft_p >= 0; }
};

// Parses argv into *opts. Returns -1 to go on, else the exit code for main to return
// (0 after -h, 2 after a usage error, with a message on stderr). Prints only when `verbose`.
int ParseArgs(int argc, char** argv, bool verbose, Options* opts);

// Parses "64", "8K", "32M", "1G" (powers of 1024) into *bytes.
bool ParseSize(const char* text, size_t* bytes);

size_t TypeSize(sieveDataType_t type);
const char* TypeName(sieveDataType_t type);
const char* OpName(sieveRedOp_t op);
const char* CollectiveName(Collective coll);

// True for the collectives that take a reduction operation / a root.
bool HasOp(Collective coll);
bool HasRoot(Collective coll);

}  // namespace perf
}  // namespace sieve

#endif  // SIEVE_BENCH_PERF_ARGS_H_
