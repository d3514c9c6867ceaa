/* What the peer drivers (mpi-allreduce-perf, gloo-allreduce-perf) share so
 * their tables line up with sieve-perf's: the size-sweep options, the inputs
 * and their check, and the table's columns. Plain C (static inline), so the C
 * MPI driver and the C++ Gloo driver include the same text. Its buffer
 * allocation (PeerAlloc, PeerBuffer) is sieve-perf's and the kernel
 * benchmarks' too, so every program measures on the same alignment. */
#ifndef SIEVE_BENCH_PEER_PERF_H_
#define SIEVE_BENCH_PEER_PERF_H_

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A benchmark buffer of at least `bytes`, zeroed, 64-byte aligned as PyTorch's CPU
 * allocator aligns tensors (cudaMalloc: 256), so no driver's vector loads or stores
 * split cache lines and the streaming stores of Sieve's dequantizers apply; NULL when
 * out of memory. Free with free(). */
static inline void* PeerAlloc(size_t bytes) {
  size_t rounded = (bytes + 63) / 64 * 64;
  void* p = aligned_alloc(64, rounded > 0 ? rounded : 64);
  if (p != NULL) memset(p, 0, rounded);
  return p;
}

typedef struct {
  size_t min_bytes, max_bytes, step_bytes; /* step_bytes 0: multiply by step_factor */
  double step_factor;
  int iters, warmup, check;
} PeerSweep;

/* sieve-perf's defaults: one 32 MiB size, 20 iterations after 5 warm-ups, checked. */
static inline PeerSweep PeerSweepDefaults(void) {
  PeerSweep s = {(size_t)32 << 20, (size_t)32 << 20, 0, 2.0, 20, 5, 1};
  return s;
}

typedef struct {
  double time_us, algbw, busbw;
  long long wrong; /* -1: not checked. */
} PeerResult;

/* "32M" -> 33554432 (K, M, G suffixes); 0 on anything else. */
static inline int PeerParseSize(const char* text, size_t* bytes) {
  char* end = NULL;
  unsigned long long v;
  int shift = 0;
  errno = 0;
  v = strtoull(text, &end, 10);
  if (errno || end == text || text[0] == '-') return 0;
  if (*end == 'K' || *end == 'k') shift = 10;
  if (*end == 'M' || *end == 'm') shift = 20;
  if (*end == 'G' || *end == 'g') shift = 30;
  if (shift) ++end;
  if (*end != '\0') return 0;
  *bytes = (size_t)(v << shift);
  return 1;
}

/* Applies sweep option `c` (-b -e -i -f -n -w -c) with its argument: 1 when
 * valid, 0 when not, -1 when `c` is not a sweep option. */
static inline int PeerSweepOption(int c, const char* arg, PeerSweep* s) {
  char* end = NULL;
  switch (c) {
    case 'b':
      return PeerParseSize(arg, &s->min_bytes);
    case 'e':
      return PeerParseSize(arg, &s->max_bytes);
    case 'i':
      return PeerParseSize(arg, &s->step_bytes) && s->step_bytes > 0;
    case 'f':
      s->step_factor = strtod(arg, &end);
      return !*end && s->step_factor > 1;
    case 'n':
      return (s->iters = atoi(arg)) > 0;
    case 'w':
      return (s->warmup = atoi(arg)) >= 0;
    case 'c':
      s->check = atoi(arg);
      return s->check == 0 || s->check == 1;
    default:
      return -1;
  }
}

/* The size after `bytes` in the sweep (always larger). */
static inline size_t PeerNextBytes(const PeerSweep* s, size_t bytes) {
  size_t next = s->step_bytes ? bytes + s->step_bytes : (size_t)((double)bytes * s->step_factor);
  return next > bytes ? next : bytes + 1;
}

/* Small integers from (rank, index, seed): sums over ranks are exact in float. */
static inline float PeerInput(int rank, size_t i, uint64_t seed) {
  uint64_t x = seed * 0x9e3779b97f4a7c15ull ^ ((uint64_t)rank << 40) ^ i;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return (float)((long)((x ^ (x >> 31)) % 9) - 4);
}

static inline void PeerFill(float* buf, size_t count, int rank, uint64_t seed) {
  size_t i;
  for (i = 0; i < count; ++i) buf[i] = PeerInput(rank, i, seed);
}

/* Elements of a float sum over `nranks` ranks' PeerFill(seed) that are wrong. */
static inline long long PeerCountWrong(const float* out, size_t count, int nranks, uint64_t seed) {
  long long wrong = 0;
  size_t i;
  int r;
  for (i = 0; i < count; ++i) {
    float want = 0;
    for (r = 0; r < nranks; ++r) want += PeerInput(r, i, seed);
    wrong += out[i] != want;
  }
  return wrong;
}

/* The column headings under each driver's own first line. */
static inline void PeerPrintColumns(void) {
  int i;
  printf("#%74s%31s\n", "out-of-place", "in-place");
  printf("#%11s  %12s  %8s  %6s  %6s", "size", "count", "type", "redop", "root");
  for (i = 0; i < 2; ++i) printf("  %7s  %6s  %6s  %6s", "time", "algbw", "busbw", "#wrong");
  printf("\n#%11s  %12s%35s  %6s  %6s", "(B)", "(elements)", "(us)", "(GB/s)", "(GB/s)");
  printf("%17s  %6s  %6s\n", "(us)", "(GB/s)", "(GB/s)");
  fflush(stdout);
}

static inline void PeerPrintResult(const PeerResult* r) {
  printf(r->time_us < 1e4 ? "  %7.2f" : r->time_us < 1e5 ? "  %7.1f" : "  %7.0f", r->time_us);
  printf("  %6.2f  %6.2f", r->algbw, r->busbw);
  if (r->wrong < 0)
    printf("  %6s", "N/A");
  else
    printf("  %6lld", r->wrong);
}

/* One row: `count` floats, out of place then in place. */
static inline void PeerPrintRow(size_t count, const PeerResult* out, const PeerResult* in) {
  printf("%12zu  %12zu  %8s  %6s  %6d", count * sizeof(float), count, "float", "sum", -1);
  PeerPrintResult(out);
  PeerPrintResult(in);
  printf("\n");
  fflush(stdout);
}

/* Bandwidths of one all-reduce of `count` floats taking `time_us` on `nranks`. */
static inline void PeerSetBandwidth(PeerResult* r, size_t count, int nranks) {
  r->algbw = r->time_us > 0 ? (double)(count * sizeof(float)) / r->time_us / 1e3 : 0;
  r->busbw = r->algbw * 2.0 * (nranks - 1) / nranks;
}

#ifdef __cplusplus
#include <memory>
#include <new>

/* PeerAlloc's buffer of `bytes` as T, owned (freed with free()); throws std::bad_alloc. */
struct PeerFree {
  void operator()(void* p) const { free(p); }
};
template <typename T>
using PeerBuffer = std::unique_ptr<T[], PeerFree>;
template <typename T>
PeerBuffer<T> PeerBufferOf(size_t bytes) {
  PeerBuffer<T> buf(static_cast<T*>(PeerAlloc(bytes)));
  if (!buf) throw std::bad_alloc();
  return buf;
}
#endif

#endif /* SIEVE_BENCH_PEER_PERF_H_ */
