/* mpi-allreduce-perf: MPI_Allreduce (float, sum) over the same size sweep and with the same
 * columns as sieve-perf, so the two tables can be compared side by side. */
#include <errno.h>
#include <getopt.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  size_t min_bytes, max_bytes, step_bytes;
  double step_factor;
  int iters, warmup, check;
} Options;

typedef struct {
  double time_us, algbw, busbw;
  long long wrong; /* -1: not checked. */
} Result;

static int ParseSize(const char* text, size_t* bytes) {
  char* end = NULL;
  errno = 0;
  unsigned long long v = strtoull(text, &end, 10);
  int shift = 0;
  if (errno || end == text || text[0] == '-') return 0;
  if (*end == 'K' || *end == 'k') shift = 10;
  if (*end == 'M' || *end == 'm') shift = 20;
  if (*end == 'G' || *end == 'g') shift = 30;
  if (shift) ++end;
  if (*end != '\0') return 0;
  *bytes = (size_t)(v << shift);
  return 1;
}

static void PrintUsage(void) {
  printf(
      "Usage: mpirun -np N mpi-allreduce-perf [-b 32M] [-e 32M] [-f 2 | -i BYTES] [-n 20]\n"
      "       [-w 5] [-c 1] [-d float]   (MPI_Allreduce, float, sum; K/M/G suffixes)\n");
}

/* Returns -1 to go on, else the exit code. */
static int ParseArgs(int argc, char** argv, int verbose, Options* o) {
  int c, ok = 1;
  char* end;
  *o = (Options){32 << 20, 32 << 20, 0, 2.0, 20, 5, 1};
  opterr = verbose;
  while (ok && (c = getopt(argc, argv, "b:e:f:i:n:w:c:d:h")) != -1) {
    switch (c) {
      case 'b':
        ok = ParseSize(optarg, &o->min_bytes);
        break;
      case 'e':
        ok = ParseSize(optarg, &o->max_bytes);
        break;
      case 'i':
        ok = ParseSize(optarg, &o->step_bytes) && o->step_bytes > 0;
        break;
      case 'f':
        o->step_factor = strtod(optarg, &end);
        ok = !*end && o->step_factor > 1;
        break;
      case 'n':
        o->iters = atoi(optarg);
        ok = o->iters > 0;
        break;
      case 'w':
        o->warmup = atoi(optarg);
        ok = o->warmup >= 0;
        break;
      case 'c':
        o->check = atoi(optarg);
        ok = o->check == 0 || o->check == 1;
        break;
      case 'd':
        ok = strcmp(optarg, "float") == 0;
        break;
      case 'h':
        if (verbose) PrintUsage();
        return 0;
      default:
        ok = 0;
        break;
    }
  }
  if (!ok || optind < argc || o->min_bytes > o->max_bytes || o->max_bytes / 4 > 0x7fffffff) {
    if (verbose) fprintf(stderr, "mpi-allreduce-perf: bad arguments (only -d float)\n");
    if (verbose) PrintUsage();
    return 2;
  }
  return -1;
}

/* Small integers from (rank, index, seed): sums over ranks are exact in float. */
static float Input(int rank, size_t i, uint64_t seed) {
  uint64_t x = seed * 0x9e3779b97f4a7c15ull ^ ((uint64_t)rank << 40) ^ i;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return (float)((long)((x ^ (x >> 31)) % 9) - 4);
}

static void Fill(float* buf, size_t count, int rank, uint64_t seed) {
  for (size_t i = 0; i < count; ++i) buf[i] = Input(rank, i, seed);
}

static long long CountWrong(const float* out, size_t count, int nranks, uint64_t seed) {
  long long wrong = 0;
  for (size_t i = 0; i < count; ++i) {
    float want = 0;
    for (int r = 0; r < nranks; ++r) want += Input(r, i, seed);
    wrong += out[i] != want;
  }
  return wrong;
}

/* Times one placement and (with -c 1) checks it; every rank gets the same result. */
static Result Measure(const Options* o, float* send, float* recv, size_t count, int in_place,
                      uint64_t seed) {
  int rank, nranks;
  Result res = {0, 0, 0, -1};
  const void* src = in_place ? MPI_IN_PLACE : send;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  Fill(in_place ? recv : send, count, rank, 0);
  for (int i = 0; i < o->warmup; ++i)
    MPI_Allreduce(src, recv, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  MPI_Barrier(MPI_COMM_WORLD);
  double start = MPI_Wtime();
  for (int i = 0; i < o->iters; ++i)
    MPI_Allreduce(src, recv, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  double t = (MPI_Wtime() - start) * 1e6 / o->iters;
  MPI_Allreduce(&t, &res.time_us, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  res.algbw = res.time_us > 0 ? (double)(count * sizeof(float)) / res.time_us / 1e3 : 0;
  res.busbw = res.algbw * 2.0 * (nranks - 1) / nranks;
  if (o->check) {
    memset(recv, 0xff, count * sizeof(float));
    Fill(in_place ? recv : send, count, rank, seed);
    MPI_Allreduce(src, recv, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    long long wrong = CountWrong(recv, count, nranks, seed);
    MPI_Allreduce(&wrong, &res.wrong, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
  }
  return res;
}

static void PrintHeader(const Options* o, int nranks) {
  printf(
      "#  nranks %d  collective MPI_Allreduce  type float  op sum  root 0  iters %d  warmup %d"
      "  check %d\n",
      nranks, o->iters, o->warmup, o->check);
  printf(
      "#  size = bytes of each rank's output (= its input); count = size / type size; "
      "time = max over ranks\n");
  printf("#%74s%31s\n", "out-of-place", "in-place");
  printf("#%11s  %12s  %8s  %6s  %6s", "size", "count", "type", "redop", "root");
  for (int i = 0; i < 2; ++i) printf("  %7s  %6s  %6s  %6s", "time", "algbw", "busbw", "#wrong");
  printf("\n#%11s  %12s%35s  %6s  %6s", "(B)", "(elements)", "(us)", "(GB/s)", "(GB/s)");
  printf("%17s  %6s  %6s\n", "(us)", "(GB/s)", "(GB/s)");
}

static void PrintResult(const Result* r) {
  printf(r->time_us < 1e4 ? "  %7.2f" : r->time_us < 1e5 ? "  %7.1f" : "  %7.0f", r->time_us);
  printf("  %6.2f  %6.2f", r->algbw, r->busbw);
  if (r->wrong < 0)
    printf("  %6s", "N/A");
  else
    printf("  %6lld", r->wrong);
}

/* Runs the sweep; returns the total number of wrong elements. */
static long long Sweep(const Options* o, int rank) {
  size_t max_count = o->max_bytes / sizeof(float) + 1;
  float* send = malloc(max_count * sizeof(float));
  float* recv = malloc(max_count * sizeof(float));
  long long wrong = 0, rows = 0;
  double busbw_sum = 0;
  uint64_t seed = 0;
  for (size_t bytes = o->min_bytes; bytes <= o->max_bytes;) {
    size_t count = bytes / sizeof(float);
    Result out = Measure(o, send, recv, count, 0, ++seed);
    Result in = Measure(o, send, recv, count, 1, ++seed);
    wrong += (out.wrong > 0 ? out.wrong : 0) + (in.wrong > 0 ? in.wrong : 0);
    busbw_sum += out.busbw + in.busbw;
    rows += 2;
    if (rank == 0) {
      printf("%12zu  %12zu  %8s  %6s  %6d", count * sizeof(float), count, "float", "sum", -1);
      PrintResult(&out);
      PrintResult(&in);
      printf("\n");
      fflush(stdout);
    }
    size_t next = o->step_bytes ? bytes + o->step_bytes : (size_t)(bytes * o->step_factor);
    bytes = next > bytes ? next : bytes + 1;
  }
  if (rank == 0) {
    printf("# Out of bounds values : %lld %s\n", wrong, wrong ? "FAILED" : "OK");
    printf("# Avg bus bandwidth    : %g\n#\n", rows ? busbw_sum / rows : 0.0);
  }
  free(send);
  free(recv);
  return wrong;
}

int main(int argc, char** argv) {
  int rank, nranks, rc;
  Options o;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  rc = ParseArgs(argc, argv, rank == 0, &o);
  if (rc < 0) {
    if (rank == 0) PrintHeader(&o, nranks);
    rc = Sweep(&o, rank) ? 1 : 0;
  }
  MPI_Finalize();
  return rc;
}
