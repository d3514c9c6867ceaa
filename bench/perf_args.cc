// Parsing of sieve-perf's command line and the name tables for types, ops and collectives.
#include "perf_args.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

namespace sieve {
namespace perf {
namespace {

struct TypeEntry {
  const char* name;
  sieveDataType_t type;
};
const TypeEntry kTypes[] = {
    {"int8", sieveInt8},       {"uint8", sieveUint8},       {"int32", sieveInt32},
    {"uint32", sieveUint32},   {"int64", sieveInt64},       {"uint64", sieveUint64},
    {"half", sieveFloat16},    {"float16", sieveFloat16},   {"float", sieveFloat32},
    {"float32", sieveFloat32}, {"bfloat16", sieveBfloat16}, {"double", sieveFloat64},
    {"float64", sieveFloat64}};
const char* const kOpNames[] = {"sum", "prod", "max", "min", "avg"};
const char* const kCollNames[] = {"allreduce", "broadcast",     "reduce",
                                  "allgather", "reducescatter", "sendrecv"};

void PrintUsage(FILE* f) {
  fprintf(f,
          "Usage: sieve-perf [options]   (one rank per process, e.g. sieve-run -n 4 sieve-perf)\n"
          "  -b, --minbytes N       smallest size (K/M/G suffixes; default 32M)\n"
          "  -e, --maxbytes N       largest size (default 32M)\n"
          "  -f, --stepfactor F     multiply the size by F each step (default 2)\n"
          "  -i, --stepbytes N      add N bytes each step instead of -f\n"
          "  -d, --datatype T       int8 uint8 int32 uint32 int64 uint64 half float16\n"
          "                         float bfloat16 double (default float)\n"
          "  -o, --op OP            sum prod max min avg (default sum)\n"
          "  -r, --root R           root of broadcast/reduce (default 0)\n"
          "  -c, --check 0|1        verify results, count wrong elements (default 1)\n"
          "  -n, --iters N          timed iterations per size (default 20)\n"
          "  -w, --warmup_iters N   untimed iterations first (default 5)\n"
          "  -x, --collective C     allreduce broadcast reduce allgather reducescatter\n"
          "                         sendrecv (default allreduce)\n"
          "      --json FILE        write the results as a JSON array\n"
          "      --csv FILE         write the results as CSV\n"
          "      --mode M           dense, masked (sieveAllReduceMasked) or auto-mask (plain\n"
          "                         allreduce of data that is zero outside the mask, with\n"
          "                         SIEVE_AUTO_MASK=1) -- allreduce only; default dense\n"
          "      --quant Q          none, ternary, or qL for L levels (q3, q7, q127: about 3, 4,\n"
          "                         8 bits; q1 is ternary), or auto (SIEVE_LEVELS_AUTO: dense\n"
          "                         or a level per call; a '# auto chose' line per size says\n"
          "                         which) (allreduce; ternary and qL also reducescatter;\n"
          "                         float/half/bfloat16, sum/avg; results are stochastic, so\n"
          "                         #wrong is N/A); int8 or int4: block-scaled allgather\n"
          "      --feedback         with --quant ternary/qL/auto: error feedback (each rank keeps\n"
          "                         a residual per buffer: params.error_feedback = 1)\n"
          "      --mask-density D   masked mode: random mask keeping D of the elements, the\n"
          "                         same on every rank (0..1, default 1)\n"
          "      --layout sdp:C     SDP: sieveAllReduceSubnet on a balanced random layout of 64\n"
          "                         equal blocks, each held by about C*nranks ranks (0 < C <= 1;\n"
          "                         the same layout on every rank); the result is the average\n"
          "                         over each block's holders (float, half, bfloat16, double)\n"
          "      --d2ft P           D2FT: sieveAllReduceD2ft over 64 equal subnets held by every\n"
          "                         rank, each touched by each rank with probability P (0..1;\n"
          "                         one fixed random table, bitmaps all-gathered every call)\n"
          "  -h, --help             this text\n");
}

bool ParseInt(const char* text, long min, long* out) {
  char* end = nullptr;
  errno = 0;
  long v = strtol(text, &end, 10);
  if (errno || *text == '\0' || *end != '\0' || v < min) return false;
  *out = v;
  return true;
}

template <typename T, size_t N>
int FindName(const T (&names)[N], const char* text) {
  for (size_t i = 0; i < N; ++i) {
    if (strcmp(names[i], text) == 0) return static_cast<int>(i);
  }
  return -1;
}

bool ParseType(const char* text, sieveDataType_t* type) {
  for (const TypeEntry& e : kTypes) {
    if (strcmp(e.name, text) == 0) {
      *type = e.type;
      return true;
    }
  }
  return false;
}

// Applies one option to *opts; false (with a message) when its value is bad.
bool ApplyOption(int c, const char* arg, Options* opts) {
  long v = 0;
  int index;
  char* end = nullptr;
  switch (c) {
    case 'b':
      return ParseSize(arg, &opts->min_bytes);
    case 'e':
      return ParseSize(arg, &opts->max_bytes);
    case 'i':
      return ParseSize(arg, &opts->step_bytes) && opts->step_bytes > 0;
    case 'f':
      opts->step_factor = strtod(arg, &end);
      return *end == '\0' && opts->step_factor > 1;
    case 'd':
      return ParseType(arg, &opts->type);
    case 'o':
      index = FindName(kOpNames, arg);
      opts->op = static_cast<sieveRedOp_t>(index);
      return index >= 0;
    case 'x':
      index = FindName(kCollNames, arg);
      opts->coll = static_cast<Collective>(index);
      return index >= 0;
    case 'r':
      return ParseInt(arg, 0, &v) && (opts->root = static_cast<int>(v), true);
    case 'c':
      return ParseInt(arg, 0, &v) && v <= 1 && (opts->check = v != 0, true);
    case 'n':
      return ParseInt(arg, 1, &v) && (opts->iters = static_cast<int>(v), true);
    case 'w':
      return ParseInt(arg, 0, &v) && (opts->warmup = static_cast<int>(v), true);
    case 'J':
      opts->json_path = arg;
      return true;
    case 'C':
      opts->csv_path = arg;
      return true;
    case 'F':
      opts->feedback = true;
      return true;
    case 'M':
      if (strcmp(arg, "dense") != 0 && strcmp(arg, "masked") != 0 &&
          strcmp(arg, "auto-mask") != 0)
        return false;
      opts->masked = strcmp(arg, "masked") == 0;
      opts->auto_mask = strcmp(arg, "auto-mask") == 0;
      return true;
    case 'Q':
      if (arg[0] == 'q') {  // qL: L levels (the library checks 1..SIEVE_MAX_LEVELS)
        long v = 0;
        if (!ParseInt(arg + 1, 1, &v) || v > SIEVE_MAX_LEVELS) return false;
        opts->ternary = true;
        opts->levels = static_cast<int>(v);
        opts->gather_bits = 0;
        return true;
      }
      if (strcmp(arg, "auto") == 0) {
        opts->ternary = true;
        opts->levels = SIEVE_LEVELS_AUTO;
        opts->gather_bits = 0;
        return true;
      }
      if (strcmp(arg, "int8") == 0 || strcmp(arg, "int4") == 0) {
        opts->ternary = false;
        opts->gather_bits = arg[3] == '8' ? 8 : 4;
        return true;
      }
      if (strcmp(arg, "none") != 0 && strcmp(arg, "ternary") != 0) return false;
      opts->ternary = strcmp(arg, "ternary") == 0;
      opts->levels = 1;
      opts->gather_bits = 0;
      return true;
    case 'L': {
      if (strncmp(arg, "sdp:", 4) != 0) return false;
      char* end = nullptr;
      double c = strtod(arg + 4, &end);
      return end != arg + 4 && *end == '\0' && c > 0 && c <= 1 && (opts->sdp_coverage = c, true);
    }
    case 'P': {
      char* end = nullptr;
      double p = strtod(arg, &end);
      return end != arg && *end == '\0' && p >= 0 && p <= 1 && (opts->d2ft_p = p, true);
    }
    case 'D': {
      char* end = nullptr;
      double d = strtod(arg, &end);
      return end != arg && *end == '\0' && d >= 0 && d <= 1 && (opts->mask_density = d, true);
    }
    default:
      return false;
  }
}

}  // namespace

bool ParseSize(const char* text, size_t* bytes) {
  char* end = nullptr;
  errno = 0;
  unsigned long long v = strtoull(text, &end, 10);
  if (errno || end == text || text[0] == '-') return false;
  int shift = 0;
  switch (*end) {
    case 'K':
    case 'k':
      shift = 10;
      ++end;
      break;
    case 'M':
    case 'm':
      shift = 20;
      ++end;
      break;
    case 'G':
    case 'g':
      shift = 30;
      ++end;
      break;
    default:
      break;
  }
  if (*end == 'B' || *end == 'b') ++end;
  if (*end != '\0' || (shift && v > (~0ull >> shift))) return false;
  *bytes = static_cast<size_t>(v << shift);
  return true;
}

int ParseArgs(int argc, char** argv, bool verbose, Options* opts) {
  static const option kLong[] = {{"minbytes", required_argument, nullptr, 'b'},
                                 {"maxbytes", required_argument, nullptr, 'e'},
                                 {"stepfactor", required_argument, nullptr, 'f'},
                                 {"stepbytes", required_argument, nullptr, 'i'},
                                 {"datatype", required_argument, nullptr, 'd'},
                                 {"op", required_argument, nullptr, 'o'},
                                 {"root", required_argument, nullptr, 'r'},
                                 {"check", required_argument, nullptr, 'c'},
                                 {"iters", required_argument, nullptr, 'n'},
                                 {"warmup_iters", required_argument, nullptr, 'w'},
                                 {"collective", required_argument, nullptr, 'x'},
                                 {"json", required_argument, nullptr, 'J'},
                                 {"csv", required_argument, nullptr, 'C'},
                                 {"mode", required_argument, nullptr, 'M'},
                                 {"mask-density", required_argument, nullptr, 'D'},
                                 {"quant", required_argument, nullptr, 'Q'},
                                 {"layout", required_argument, nullptr, 'L'},
                                 {"d2ft", required_argument, nullptr, 'P'},
                                 {"feedback", no_argument, nullptr, 'F'},
                                 {"help", no_argument, nullptr, 'h'},
                                 {nullptr, 0, nullptr, 0}};
  opterr = verbose ? 1 : 0;
  int c;
  while ((c = getopt_long(argc, argv, "b:e:f:i:d:o:r:c:n:w:x:h", kLong, nullptr)) != -1) {
    if (c == 'h') {
      if (verbose) PrintUsage(stdout);
      return 0;
    }
    if (c == '?' || !ApplyOption(c, optarg, opts)) {
      if (verbose && c != '?') fprintf(stderr, "sieve-perf: bad value '%s' for -%c\n", optarg, c);
      if (verbose) PrintUsage(stderr);
      return 2;
    }
  }
  // Quantized: no exact reference here (stochastic rounding, or the int8/int4 error).
  if (opts->ternary || opts->gather_bits != 0) opts->check = false;
  if (opts->ternary && opts->coll != Collective::kAllReduce &&
      opts->coll != Collective::kReduceScatter) {
    if (verbose) fprintf(stderr, "sieve-perf: --quant ternary/qL runs allreduce or reducescatter\n");
    return 2;
  }
  if (opts->feedback && !opts->ternary) {
    if (verbose) fprintf(stderr, "sieve-perf: --feedback needs --quant ternary, qL or auto\n");
    return 2;
  }
  if (opts->levels == SIEVE_LEVELS_AUTO && opts->coll != Collective::kAllReduce) {
    if (verbose) fprintf(stderr, "sieve-perf: --quant auto runs allreduce only\n");
    return 2;
  }
  if (opts->gather_bits != 0 && opts->coll != Collective::kAllGather) {
    if (verbose) fprintf(stderr, "sieve-perf: --quant int8/int4 runs allgather only\n");
    return 2;
  }
  if ((opts->masked || opts->auto_mask) && opts->coll != Collective::kAllReduce) {
    if (verbose) fprintf(stderr, "sieve-perf: --mode masked runs allreduce only\n");
    return 2;
  }
  if (opts->subnet()) {
    const char* why = nullptr;
    if (opts->sdp_coverage >= 0 && opts->d2ft_p >= 0) why = "--layout and --d2ft exclude each other";
    else if (opts->coll != Collective::kAllReduce) why = "--layout/--d2ft run allreduce only";
    else if (opts->masked || opts->auto_mask || opts->ternary)
      why = "--layout/--d2ft do not combine with --mode masked/auto-mask or --quant";
    else if (opts->type != sieveFloat32 && opts->type != sieveFloat16 &&
             opts->type != sieveBfloat16 && opts->type != sieveFloat64)
      why = "--layout/--d2ft take float, half, bfloat16 or double";
    if (why != nullptr) {
      if (verbose) fprintf(stderr, "sieve-perf: %s\n", why);
      return 2;
    }
  }
  if (optind < argc || opts->min_bytes > opts->max_bytes) {
    if (verbose)
      fprintf(stderr, "sieve-perf: %s\n", optind < argc ? "unexpected argument" : "-b > -e");
    return 2;
  }
  return -1;
}

size_t TypeSize(sieveDataType_t type) {
  switch (type) {
    case sieveInt8:
    case sieveUint8:
      return 1;
    case sieveFloat16:
    case sieveBfloat16:
      return 2;
    case sieveInt32:
    case sieveUint32:
    case sieveFloat32:
      return 4;
    default:
      return 8;
  }
}

const char* TypeName(sieveDataType_t type) {
  static const char* const kNames[] = {"int8",   "uint8", "int32", "uint32", "int64",
                                       "uint64", "half",  "float", "double", "bfloat16"};
  return type >= 0 && type < sieveNumTypes ? kNames[type] : "?";
}

const char* OpName(sieveRedOp_t op) { return op >= 0 && op < sieveNumOps ? kOpNames[op] : "?"; }

const char* CollectiveName(Collective coll) { return kCollNames[static_cast<int>(coll)]; }

bool HasOp(Collective coll) {
  return coll == Collective::kAllReduce || coll == Collective::kReduce ||
         coll == Collective::kReduceScatter;
}

bool HasRoot(Collective coll) {
  return coll == Collective::kBroadcast || coll == Collective::kReduce;
}

}  // namespace perf
}  // namespace sieve
