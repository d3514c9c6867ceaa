// Per-collective rules of sieve-perf: the nccl-tests size/count conventions, bus-bandwidth
// factors, buffer placement, and deterministic inputs with locally computed expected outputs.
#ifndef SIEVE_BENCH_PERF_COLL_H_
#define SIEVE_BENCH_PERF_COLL_H_

#include <stddef.h>
#include <stdint.h>

#include "perf_args.h"
#include "perf_subnet.h"

namespace sieve {
namespace perf {

// Element counts of one call at one size (nccl-tests conventions).
struct Shape {
  size_t bytes = 0;       // The "size" column: max(per-rank input, per-rank output) bytes.
  size_t count = 0;       // The "count" column: bytes / type size.
  size_t send_count = 0;  // Elements in each rank's input.
  size_t recv_count = 0;  // Elements in each rank's output.
  size_t call_count = 0;  // The count argument of the call.
};

// The size is rounded down to whole elements (and, for allgather and reducescatter, to a
// multiple of nranks elements).
Shape ShapeOf(Collective coll, size_t bytes, int nranks, size_t type_size);

// busbw = algbw * factor: 2(n-1)/n for allreduce, (n-1)/n for allgather/reducescatter, else 1.
double BusBwFactor(Collective coll, int nranks);

// A one-line description of what "size" means for the collective, for the table header.
const char* SizeMeaning(Collective coll);

// False for sendrecv, whose send and receive buffers cannot be the same.
bool SupportsInPlace(Collective coll);

struct CallBuffers {
  void* send;
  void* recv;
};

// The buffers of one call. In place: allgather sends from recv + rank*send_count,
// reducescatter receives into send + rank*recv_count, the others use send == recv.
CallBuffers PlaceBuffers(Collective coll, const Shape& shape, int rank, bool in_place,
                         size_t type_size, void* send_base, void* recv_base);

// Fills inputs and checks outputs. Inputs are small integers chosen from (rank, element
// index, seed), so sums and products are exact in every type and any rank can compute any
// other rank's inputs. Thread-compatible; holds no buffers.
class Checker {
 public:
  Checker(const Options& opts, int rank, int nranks);

  // Masked mode: keep[i] == 0 means output element i must be 0 (null: no mask).
  void SetMask(const uint8_t* keep) { keep_ = keep; }
  // Auto-mask mode: inputs are also zero where keep[i] == 0.
  void SetZeroOutsideMask(bool zero) { zero_outside_ = zero; }
  // Subnet modes: outputs are averages over each subnet's contributors, and
  // unchanged where this rank holds nothing or nobody contributed (null: off).
  void SetSubnet(const SubnetSetup* setup) { subnet_ = setup; }

  // Poisons this rank's output, then writes its input for `seed`.
  void Prepare(const Shape& shape, const CallBuffers& bufs, uint64_t seed) const;

  // Returns how many elements of this rank's output differ from the expected result.
  // REQUIRES: the collective ran once on buffers set up by Prepare with the same seed.
  int64_t CountWrong(const Shape& shape, const CallBuffers& bufs, uint64_t seed) const;

 private:
  double Input(int rank, size_t index, uint64_t seed) const;
  double ReduceOverRanks(size_t index, uint64_t seed) const;
  // Expected value of element i of this rank's output; false when it is unspecified.
  bool Expected(const Shape& shape, size_t i, uint64_t seed, double* value) const;
  bool Matches(double got, double want) const;
  int64_t CountWrongSubnet(const Shape& shape, const CallBuffers& bufs, uint64_t seed) const;

  const Options& opts_;
  int rank_;
  int nranks_;
  long range_;  // Inputs of sum/max/min/avg lie in [-range_, range_] (or [0, range_]).
  const uint8_t* keep_ = nullptr;
  bool zero_outside_ = false;
  const SubnetSetup* subnet_ = nullptr;
};

}  // namespace perf
}  // namespace sieve

#endif  // SIEVE_BENCH_PERF_COLL_H_
