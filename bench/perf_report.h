// sieve-perf's output: the nccl-tests style table on stdout and the --json / --csv files.
#ifndef SIEVE_BENCH_PERF_REPORT_H_
#define SIEVE_BENCH_PERF_REPORT_H_

#include <stddef.h>
#include <stdint.h>

#include <vector>

#include "perf_args.h"

namespace sieve {
namespace perf {

// The measurement of one (size, placement).
struct Row {
  size_t bytes = 0;
  size_t count = 0;
  bool in_place = false;
  double time_us = 0;  // Max over ranks of elapsed / iters.
  double algbw = 0;    // GB/s (1e9 bytes).
  double busbw = 0;
  int64_t wrong = -1;  // Summed over ranks; -1 when not checked.
  double bytes_per_rank = 0;  // Bytes sent per call (sieveCommGetCounters), max over ranks.
  // --quant auto: the choice of the last timed call (SIEVE_LEVELS_DENSE or L; the same on
  // every rank); -1 otherwise.
  int auto_levels = -1;
};

// Collects rows and prints them. Used by rank 0 only; not thread-safe.
class Report {
 public:
  Report(const Options& opts, int nranks) : opts_(opts), nranks_(nranks) {}

  void PrintHeader(const char* size_meaning) const;
  // Prints one table line; `in_place` is null when the collective has no in-place form.
  void AddLine(const Row& out_of_place, const Row* in_place);
  void PrintFooter() const;
  // Writes the --json and --csv files that were asked for; false (with a message) on error.
  bool WriteFiles() const;

 private:
  bool WriteJson(const char* path) const;
  bool WriteCsv(const char* path) const;

  const Options& opts_;
  int nranks_;
  std::vector<Row> rows_;
};

}  // namespace perf
}  // namespace sieve

#endif  // SIEVE_BENCH_PERF_REPORT_H_
