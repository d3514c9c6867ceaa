/* mpi-allreduce-perf: MPI_Allreduce (float, sum) over the same size sweep and with the same
 * columns as sieve-perf, so the two tables can be compared side by side. */
#include <getopt.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "peer_perf.h"

typedef PeerSweep Options;
typedef PeerResult Result;

static void PrintUsage(void) {
  printf(
      "Usage: mpirun -np N mpi-allreduce-perf [-b 32M] [-e 32M] [-f 2 | -i BYTES] [-n 20]\n"
      "       [-w 5] [-c 1] [-d float]   (MPI_Allreduce, float, sum; K/M/G suffixes)\n");
}

/* Returns -1 to go on, else the exit code. */
static int ParseArgs(int argc, char** argv, int verbose, Options* o) {
  int c, ok = 1;
  *o = PeerSweepDefaults();
  opterr = verbose;
  while (ok && (c = getopt(argc, argv, "b:e:f:i:n:w:c:d:h")) != -1) {
    switch (c) {
      case 'd':
        ok = strcmp(optarg, "float") == 0;
        break;
      case 'h':
        if (verbose) PrintUsage();
        return 0;
      default:
        ok = PeerSweepOption(c, optarg, o) == 1;
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

/* Times one placement and (with -c 1) checks it; every rank gets the same result. */
static Result Measure(const Options* o, float* send, float* recv, size_t count, int in_place,
                      uint64_t seed) {
  int rank, nranks;
  Result res = {0, 0, 0, -1};
  const void* src = in_place ? MPI_IN_PLACE : send;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  PeerFill(in_place ? recv : send, count, rank, 0);
  for (int i = 0; i < o->warmup; ++i)
    MPI_Allreduce(src, recv, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  MPI_Barrier(MPI_COMM_WORLD);
  double start = MPI_Wtime();
  for (int i = 0; i < o->iters; ++i)
    MPI_Allreduce(src, recv, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  double t = (MPI_Wtime() - start) * 1e6 / o->iters;
  MPI_Allreduce(&t, &res.time_us, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  PeerSetBandwidth(&res, count, nranks);
  if (o->check) {
    memset(recv, 0xff, count * sizeof(float));
    PeerFill(in_place ? recv : send, count, rank, seed);
    MPI_Allreduce(src, recv, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    long long wrong = PeerCountWrong(recv, count, nranks, seed);
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
  PeerPrintColumns();
}

/* Runs the sweep; returns the total number of wrong elements. */
static long long Sweep(const Options* o, int rank) {
  size_t max_count = o->max_bytes / sizeof(float) + 1;
  float* send = PeerAlloc(max_count * sizeof(float));
  float* recv = PeerAlloc(max_count * sizeof(float));
  if (send == NULL || recv == NULL) {
    fprintf(stderr, "mpi-allreduce-perf: out of memory for two %zu-byte buffers\n",
            max_count * sizeof(float));
    exit(1);
  }
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
    if (rank == 0) PeerPrintRow(count, &out, &in);
    bytes = PeerNextBytes(o, bytes);
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
