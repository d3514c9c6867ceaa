// Formatting of sieve-perf results: the nccl-tests style table and the JSON and CSV files.
#include "perf_report.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <string>

namespace sieve {
namespace perf {
namespace {

const char* RedopColumn(const Options& opts) { return HasOp(opts.coll) ? OpName(opts.op) : "none"; }

int RootColumn(const Options& opts) { return HasRoot(opts.coll) ? opts.root : -1; }

// "dense" or "qL": what --quant auto chose.
std::string AutoChoice(int levels) {
  return levels == SIEVE_LEVELS_DENSE ? "dense" : "q" + std::to_string(levels);
}

void PrintPlacement(const Row* row) {
  if (row == nullptr) {
    printf("  %7s  %6s  %6s  %10s  %6s", "N/A", "N/A", "N/A", "N/A", "N/A");
    return;
  }
  const char* time_format = row->time_us < 1e4   ? "  %7.2f"
                            : row->time_us < 1e5 ? "  %7.1f"
                                                 : "  %7.0f";
  printf(time_format, row->time_us);
  printf("  %6.2f  %6.2f  %10.0f", row->algbw, row->busbw, row->bytes_per_rank);
  if (row->wrong < 0) {
    printf("  %6s", "N/A");
  } else {
    printf("  %6lld", static_cast<long long>(row->wrong));
  }
}

}  // namespace

void Report::PrintHeader(const char* size_meaning) const {
  printf("#  nranks %d  collective %s  type %s  op %s  root %d  iters %d  warmup %d  check %d\n",
         nranks_, CollectiveName(opts_.coll), TypeName(opts_.type), OpName(opts_.op), opts_.root,
         opts_.iters, opts_.warmup, opts_.check ? 1 : 0);
  printf("#  %s; count = size / type size; time = max over ranks\n", size_meaning);
  if (opts_.masked) printf("#  mode masked  mask density %g\n", opts_.mask_density);
  if (opts_.sdp_coverage >= 0) printf("#  mode sdp  coverage %g (average over holders)\n", opts_.sdp_coverage);
  if (opts_.d2ft_p >= 0) printf("#  mode d2ft  touch probability %g (average over contributors)\n", opts_.d2ft_p);
  printf("#%74s%43s\n", "out-of-place", "in-place");
  printf("#%11s  %12s  %8s  %6s  %6s", "size", "count", "type", "redop", "root");
  for (int i = 0; i < 2; ++i)
    printf("  %7s  %6s  %6s  %10s  %6s", "time", "algbw", "busbw", "bytes/rank", "#wrong");
  printf("\n#%11s  %12s%35s  %6s  %6s  %10s", "(B)", "(elements)", "(us)", "(GB/s)", "(GB/s)",
         "(B sent)");
  printf("%17s  %6s  %6s  %10s\n", "(us)", "(GB/s)", "(GB/s)", "(B sent)");
  fflush(stdout);
}

void Report::AddLine(const Row& out_of_place, const Row* in_place) {
  printf("%12zu  %12zu  %8s  %6s  %6d", out_of_place.bytes, out_of_place.count,
         TypeName(opts_.type), RedopColumn(opts_), RootColumn(opts_));
  PrintPlacement(&out_of_place);
  PrintPlacement(in_place);
  printf("\n");
  if (out_of_place.auto_levels >= 0)
    printf("# auto chose %s at %zu bytes (in-place: %s)\n",
           AutoChoice(out_of_place.auto_levels).c_str(), out_of_place.bytes,
           in_place != nullptr ? AutoChoice(in_place->auto_levels).c_str() : "N/A");
  fflush(stdout);
  rows_.push_back(out_of_place);
  if (in_place != nullptr) rows_.push_back(*in_place);
}

void Report::PrintFooter() const {
  long long wrong = 0;
  double busbw_sum = 0;
  for (const Row& r : rows_) {
    wrong += r.wrong > 0 ? r.wrong : 0;
    busbw_sum += r.busbw;
  }
  printf("# Out of bounds values : %lld %s\n", wrong, wrong ? "FAILED" : "OK");
  printf("# Avg bus bandwidth    : %g\n", rows_.empty() ? 0.0 : busbw_sum / rows_.size());
  printf("#\n");
  fflush(stdout);
}

bool Report::WriteFiles() const {
  bool ok = true;
  if (!opts_.json_path.empty()) ok = WriteJson(opts_.json_path.c_str()) && ok;
  if (!opts_.csv_path.empty()) ok = WriteCsv(opts_.csv_path.c_str()) && ok;
  return ok;
}

bool Report::WriteJson(const char* path) const {
  FILE* f = fopen(path, "w");
  if (f == nullptr) {
    fprintf(stderr, "sieve-perf: cannot write %s: %s\n", path, strerror(errno));
    return false;
  }
  fprintf(f, "[");
  for (size_t i = 0; i < rows_.size(); ++i) {
    const Row& r = rows_[i];
    fprintf(f,
            "%s\n  {\"collective\": \"%s\", \"nranks\": %d, \"size\": %zu, \"count\": %zu, "
            "\"type\": \"%s\", \"redop\": \"%s\", \"root\": %d, \"placement\": \"%s\", "
            "\"time_us\": %.3f, \"algbw_gbps\": %.6f, \"busbw_gbps\": %.6f, "
            "\"bytes_per_rank\": %.0f, \"wrong\": ",
            i ? "," : "", CollectiveName(opts_.coll), nranks_, r.bytes, r.count,
            TypeName(opts_.type), RedopColumn(opts_), RootColumn(opts_),
            r.in_place ? "in-place" : "out-of-place", r.time_us, r.algbw, r.busbw,
            r.bytes_per_rank);
    if (r.wrong < 0) {
      fprintf(f, "null");
    } else {
      fprintf(f, "%lld", static_cast<long long>(r.wrong));
    }
    if (r.auto_levels >= 0) fprintf(f, ", \"auto\": \"%s\"", AutoChoice(r.auto_levels).c_str());
    fprintf(f, "}");
  }
  fprintf(f, "\n]\n");
  return fclose(f) == 0;
}

bool Report::WriteCsv(const char* path) const {
  FILE* f = fopen(path, "w");
  if (f == nullptr) {
    fprintf(stderr, "sieve-perf: cannot write %s: %s\n", path, strerror(errno));
    return false;
  }
  fprintf(f,
          "collective,nranks,size,count,type,redop,root,placement,time_us,algbw_gbps,"
          "busbw_gbps,bytes_per_rank,wrong\n");
  for (const Row& r : rows_) {
    fprintf(f, "%s,%d,%zu,%zu,%s,%s,%d,%s,%.3f,%.6f,%.6f,%.0f,", CollectiveName(opts_.coll),
            nranks_, r.bytes, r.count, TypeName(opts_.type), RedopColumn(opts_),
            RootColumn(opts_), r.in_place ? "in-place" : "out-of-place", r.time_us, r.algbw,
            r.busbw, r.bytes_per_rank);
    if (r.wrong >= 0) fprintf(f, "%lld", static_cast<long long>(r.wrong));
    fprintf(f, "\n");
  }
  return fclose(f) == 0;
}

}  // namespace perf
}  // namespace sieve
