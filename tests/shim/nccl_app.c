/* nccl_app: an ordinary NCCL program (the real nccl.h, linked against the real libnccl.so) that
 * runs every dense collective on host buffers and checks the results. With libsieve-nccl.so
 * preloaded Sieve answers and it passes; without, the real NCCL fails at init (no GPU here). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <math.h>
#include <nccl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Exit codes the driver script tells apart. */
enum { kPass = 0, kWrong = 1, kInitFailed = 2, kUsage = 3 };

static int g_rank, g_nranks, g_wrong;

/* ---- Element access as double, for every datatype Sieve serves ------------------------------ */

static float HalfToFloat(uint16_t h) {
  int exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
  float v = exp == 0 ? ldexpf((float)mant, -24) : ldexpf((float)(mant | 0x400), exp - 25);
  return (h & 0x8000) ? -v : v;
}

static uint16_t FloatToHalf(float f) { /* normal values, rounded to nearest */
  uint16_t sign = f < 0 ? 0x8000 : 0;
  float a = fabsf(f);
  if (a == 0) return sign;
  int exp;
  float m = frexpf(a, &exp);        /* a = m * 2^exp, m in [0.5, 1) */
  long mant = lroundf(m * 2048.0f); /* 11 significant bits */
  if (mant == 2048) {
    mant = 1024;
    ++exp;
  }
  return (uint16_t)(sign | ((exp + 14) << 10) | (mant & 0x3ff));
}

static double Get(ncclDataType_t t, const void* buf, size_t i) {
  switch (t) {
    case ncclInt8:
      return ((const int8_t*)buf)[i];
    case ncclUint8:
      return ((const uint8_t*)buf)[i];
    case ncclInt32:
      return ((const int32_t*)buf)[i];
    case ncclUint32:
      return ((const uint32_t*)buf)[i];
    case ncclInt64:
      return (double)((const int64_t*)buf)[i];
    case ncclUint64:
      return (double)((const uint64_t*)buf)[i];
    case ncclFloat16:
      return HalfToFloat(((const uint16_t*)buf)[i]);
    case ncclFloat32:
      return ((const float*)buf)[i];
    case ncclFloat64:
      return ((const double*)buf)[i];
    case ncclBfloat16: {
      uint32_t bits = (uint32_t)((const uint16_t*)buf)[i] << 16;
      float f;
      memcpy(&f, &bits, sizeof f);
      return f;
    }
    default:
      return NAN;
  }
}

static void Set(ncclDataType_t t, void* buf, size_t i, double v) {
  switch (t) {
    case ncclInt8:
      ((int8_t*)buf)[i] = (int8_t)v;
      break;
    case ncclUint8:
      ((uint8_t*)buf)[i] = (uint8_t)v;
      break;
    case ncclInt32:
      ((int32_t*)buf)[i] = (int32_t)v;
      break;
    case ncclUint32:
      ((uint32_t*)buf)[i] = (uint32_t)v;
      break;
    case ncclInt64:
      ((int64_t*)buf)[i] = (int64_t)v;
      break;
    case ncclUint64:
      ((uint64_t*)buf)[i] = (uint64_t)v;
      break;
    case ncclFloat16:
      ((uint16_t*)buf)[i] = FloatToHalf((float)v);
      break;
    case ncclFloat32:
      ((float*)buf)[i] = (float)v;
      break;
    case ncclFloat64:
      ((double*)buf)[i] = v;
      break;
    case ncclBfloat16: {
      float f = (float)v; /* small integers: exact in bfloat16, truncation is enough */
      uint32_t bits;
      memcpy(&bits, &f, sizeof bits);
      ((uint16_t*)buf)[i] = (uint16_t)(bits >> 16);
      break;
    }
    default:
      break;
  }
}

static size_t Size(ncclDataType_t t) {
  switch (t) {
    case ncclInt8:
    case ncclUint8:
      return 1;
    case ncclFloat16:
    case ncclBfloat16:
      return 2;
    case ncclInt32:
    case ncclUint32:
    case ncclFloat32:
      return 4;
    default:
      return 8;
  }
}

static int IsFloat(ncclDataType_t t) {
  return t == ncclFloat16 || t == ncclFloat32 || t == ncclFloat64 || t == ncclBfloat16;
}

/* Rank r's input element i (of a buffer seeded with `seed`): a small positive integer, so sums,
 * products (of up to 4 ranks) and extremes are exact in every type, int8 included. */
static double Input(int r, size_t i, int seed) { return 1 + (r + (int)i + seed) % 3; }

static void Fill(ncclDataType_t t, void* buf, size_t count, int r, int seed) {
  for (size_t i = 0; i < count; ++i) Set(t, buf, i, Input(r, i, seed));
}

static double Expected(ncclRedOp_t op, ncclDataType_t t, size_t i, int seed) {
  double acc = Input(0, i, seed);
  for (int r = 1; r < g_nranks; ++r) {
    double v = Input(r, i, seed);
    if (op == ncclProd)
      acc *= v;
    else if (op == ncclMax)
      acc = v > acc ? v : acc;
    else if (op == ncclMin)
      acc = v < acc ? v : acc;
    else
      acc += v;
  }
  if (op == ncclAvg) acc = IsFloat(t) ? acc / g_nranks : trunc(acc / g_nranks);
  return acc;
}

/* Counts one wrong element (and prints the first few). */
static void Check(const char* what, ncclDataType_t t, const void* buf, size_t i, double want) {
  double got = Get(t, buf, i);
  double tol = t == ncclFloat16 || t == ncclBfloat16 ? 0.02 * fabs(want) : 1e-6 * fabs(want);
  if (fabs(got - want) <= tol) return;
  if (g_wrong++ < 10)
    fprintf(stderr, "[%d] %s type %d: element %zu is %g, expected %g\n", g_rank, what, (int)t, i,
            got, want);
}

static int Ok(const char* what, ncclResult_t r, ncclComm_t comm) {
  if (r == ncclSuccess) return 1;
  fprintf(stderr, "[%d] %s failed: %s: %s\n", g_rank, what, ncclGetErrorString(r),
          ncclGetLastError(comm));
  ++g_wrong;
  return 0;
}

static const ncclDataType_t kTypes[] = {ncclInt8,    ncclUint8,   ncclInt32,   ncclUint32,
                                        ncclInt64,   ncclUint64,  ncclFloat16, ncclFloat32,
                                        ncclFloat64, ncclBfloat16};
static const int kNumTypes = sizeof kTypes / sizeof kTypes[0];
static const ncclRedOp_t kOps[] = {ncclSum, ncclProd, ncclMax, ncclMin, ncclAvg};
static const size_t kCounts[] = {1, 7, 1001, 65537};

/* ---- The collectives ------------------------------------------------------------------------ */

static void TestAllReduce(ncclComm_t comm, ncclDataType_t t, ncclRedOp_t op, size_t n, int seed) {
  char* send = malloc(n * Size(t));
  char* recv = malloc(n * Size(t));
  Fill(t, send, n, g_rank, seed);
  if (Ok("ncclAllReduce", ncclAllReduce(send, recv, n, t, op, comm, NULL), comm))
    for (size_t i = 0; i < n; ++i) Check("allreduce", t, recv, i, Expected(op, t, i, seed));
  /* In place, through the profiling alias. */
  if (Ok("pncclAllReduce", pncclAllReduce(send, send, n, t, op, comm, NULL), comm))
    for (size_t i = 0; i < n; ++i)
      Check("allreduce in place", t, send, i, Expected(op, t, i, seed));
  free(send);
  free(recv);
}

static void TestReduceAndBroadcast(ncclComm_t comm, ncclDataType_t t, size_t n, int seed) {
  int root = seed % g_nranks;
  char* send = malloc(n * Size(t));
  char* recv = malloc(n * Size(t));
  Fill(t, send, n, g_rank, seed);
  if (Ok("ncclReduce", ncclReduce(send, recv, n, t, ncclMax, root, comm, NULL), comm) &&
      g_rank == root)
    for (size_t i = 0; i < n; ++i) Check("reduce", t, recv, i, Expected(ncclMax, t, i, seed));
  if (Ok("ncclBroadcast", ncclBroadcast(send, recv, n, t, root, comm, NULL), comm))
    for (size_t i = 0; i < n; ++i) Check("broadcast", t, recv, i, Input(root, i, seed));
  Fill(t, recv, n, g_rank, seed + 1);
  if (Ok("ncclBcast", ncclBcast(recv, n, t, root, comm, NULL), comm))
    for (size_t i = 0; i < n; ++i) Check("bcast", t, recv, i, Input(root, i, seed + 1));
  free(send);
  free(recv);
}

static void TestGatherScatter(ncclComm_t comm, ncclDataType_t t, size_t n, int seed) {
  size_t es = Size(t), total = n * (size_t)g_nranks;
  char* send = malloc(total * es);
  char* recv = malloc(total * es);
  for (int r = 0; r < g_nranks; ++r) Fill(t, send + r * n * es, n, g_rank * 10 + r, seed);
  if (Ok("ncclAllGather", ncclAllGather(send, recv, n, t, comm, NULL), comm))
    for (int r = 0; r < g_nranks; ++r)
      for (size_t i = 0; i < n; ++i)
        Check("allgather", t, recv + r * n * es, i, Input(r * 10, i, seed));
  if (Ok("ncclReduceScatter", ncclReduceScatter(send, recv, n, t, ncclSum, comm, NULL), comm))
    for (size_t i = 0; i < n; ++i) {
      double want = 0;
      for (int r = 0; r < g_nranks; ++r) want += Input(r * 10 + g_rank, i, seed);
      Check("reducescatter", t, recv, i, want);
    }
  if (Ok("ncclAlltoAll", ncclAlltoAll(send, recv, n, t, comm, NULL), comm))
    for (int r = 0; r < g_nranks; ++r)
      for (size_t i = 0; i < n; ++i)
        Check("alltoall", t, recv + r * n * es, i, Input(r * 10 + g_rank, i, seed));
  free(send);
  free(recv);
}

static void TestRootedGatherScatter(ncclComm_t comm, ncclDataType_t t, size_t n, int seed) {
  size_t es = Size(t), total = n * (size_t)g_nranks;
  int root = (seed + 1) % g_nranks;
  char* send = malloc(total * es);
  char* recv = malloc(total * es);
  for (int r = 0; r < g_nranks; ++r) Fill(t, send + r * n * es, n, g_rank * 10 + r, seed);
  if (Ok("ncclGather", ncclGather(send, recv, n, t, root, comm, NULL), comm) && g_rank == root)
    for (int r = 0; r < g_nranks; ++r)
      for (size_t i = 0; i < n; ++i)
        Check("gather", t, recv + r * n * es, i, Input(r * 10, i, seed));
  if (Ok("ncclScatter", ncclScatter(send, recv, n, t, root, comm, NULL), comm))
    for (size_t i = 0; i < n; ++i) Check("scatter", t, recv, i, Input(root * 10 + g_rank, i, seed));
  free(send);
  free(recv);
}

/* A ring exchange both ways in one group: would deadlock if the calls ran one by one. */
static void TestSendRecv(ncclComm_t comm, ncclDataType_t t, size_t n, int seed) {
  int next = (g_rank + 1) % g_nranks, prev = (g_rank + g_nranks - 1) % g_nranks;
  size_t es = Size(t);
  char* send = malloc(n * es);
  char* from_prev = malloc(n * es);
  char* from_next = malloc(n * es);
  Fill(t, send, n, g_rank, seed);
  ncclGroupStart();
  ncclSend(send, n, t, next, comm, NULL);
  ncclSend(send, n, t, prev, comm, NULL);
  ncclRecv(from_prev, n, t, prev, comm, NULL);
  ncclRecv(from_next, n, t, next, comm, NULL);
  if (Ok("ncclGroupEnd (send/recv)", ncclGroupEnd(), comm))
    for (size_t i = 0; i < n; ++i) {
      Check("recv from prev", t, from_prev, i, Input(prev, i, seed));
      Check("recv from next", t, from_next, i, Input(next, i, seed));
    }
  free(send);
  free(from_prev);
  free(from_next);
}

/* Even and odd ranks split off (keys reversed) and all-reduce among themselves. */
static void TestSplit(ncclComm_t comm) {
  ncclComm_t sub = NULL;
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  if (!Ok("ncclCommSplit", ncclCommSplit(comm, g_rank % 2, -g_rank, &sub, &config), comm)) return;
  int size = 0, rank = -1, expected_size = (g_nranks + 1 - g_rank % 2) / 2;
  if (!Ok("ncclCommCount", ncclCommCount(sub, &size), sub) ||
      !Ok("ncclCommUserRank", ncclCommUserRank(sub, &rank), sub))
    return;
  if (size != expected_size || rank != expected_size - 1 - g_rank / 2) {
    fprintf(stderr, "[%d] split: rank %d of %d, expected %d of %d\n", g_rank, rank, size,
            expected_size - 1 - g_rank / 2, expected_size);
    ++g_wrong;
  }
  int value = g_rank, sum = 0, want = 0;
  for (int r = g_rank % 2; r < g_nranks; r += 2) want += r;
  if (Ok("ncclAllReduce (split)", ncclAllReduce(&value, &sum, 1, ncclInt32, ncclSum, sub, NULL),
         sub) &&
      sum != want) {
    fprintf(stderr, "[%d] split all-reduce: %d, expected %d\n", g_rank, sum, want);
    ++g_wrong;
  }
  Ok("ncclCommDestroy (split)", ncclCommDestroy(sub), NULL);
}

static void RunAll(ncclComm_t comm) {
  int seed = 0;
  for (int ti = 0; ti < kNumTypes; ++ti)
    for (size_t ci = 0; ci < sizeof kCounts / sizeof kCounts[0]; ++ci) {
      ncclDataType_t t = kTypes[ti];
      size_t n = kCounts[ci];
      for (size_t oi = 0; oi < sizeof kOps / sizeof kOps[0]; ++oi)
        TestAllReduce(comm, t, kOps[oi], n, ++seed);
      TestReduceAndBroadcast(comm, t, n, ++seed);
      TestGatherScatter(comm, t, n, ++seed);
      TestRootedGatherScatter(comm, t, n, ++seed);
      TestSendRecv(comm, t, n, ++seed);
    }
  TestSplit(comm);
}

static int EnvInt(const char* name, int fallback) {
  const char* v = getenv(name);
  return v != NULL && *v != '\0' ? atoi(v) : fallback;
}

/* A training-like loop: `steps` in-place float all-reduces of one gradient buffer whose zero
 * pattern never changes (a quarter of the elements are non-zero), each checked exactly. With
 * SIEVE_NCCL_MODE=auto-mask Sieve's mask tracker should end up sending fewer bytes. */
static void RunGradientSteps(ncclComm_t comm, int steps) {
  enum { kGrad = 65536 };
  static float grad[kGrad];
  /* NCCL_APP_LOSSY=1 (Sieve's ternary modes): each result is a stochastic rounding of the sum,
   * so check it is within n * max|g| of the sum, exactly 0 where every input is 0, and unbiased
   * on average over the step's kept elements. */
  int lossy = EnvInt("NCCL_APP_LOSSY", 0);
  for (int step = 0; step < steps; ++step) {
    for (size_t j = 0; j < kGrad; ++j)
      grad[j] = j % 4 == 0 ? (float)((j + g_rank + step) % 5 + 1) : 0.0f;
    if (!Ok("ncclAllReduce (gradient)", ncclAllReduce(grad, grad, kGrad, ncclFloat, ncclSum, comm,
                                                      NULL), comm))
      return;
    double bias = 0;
    for (size_t j = 0; j < kGrad; ++j) {
      double want = 0;
      for (int r = 0; r < g_nranks; ++r) want += j % 4 == 0 ? (double)((j + r + step) % 5 + 1) : 0;
      if (!lossy) {
        Check("gradient all-reduce", ncclFloat, grad, j, want);
      } else if (fabs(grad[j] - want) > 5.0 * g_nranks || (want == 0 && grad[j] != 0)) {
        if (g_wrong++ < 10) fprintf(stderr, "[%d] element %zu: %g, sum %g\n", g_rank, j, grad[j], want);
      }
      bias += (grad[j] - want) / (kGrad / 4);
    }
    if (lossy && fabs(bias) > 0.25) {
      fprintf(stderr, "[%d] step %d: mean error %g: biased\n", g_rank, step, bias);
      ++g_wrong;
    }
  }
}

/* ---- Startup: rank 0 creates the id and publishes it through a file ------------------------- */


/* Rank 0 writes 'K' + id (or 'F' when ncclGetUniqueId failed) to a temporary file and renames
 * it into place; the others wait for it (NCCL_APP_WAIT_S seconds). Returns 0 on success. */
static int ShareId(const char* path, ncclUniqueId* id) {
  if (g_rank == 0) {
    ncclResult_t r = ncclGetUniqueId(id);
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE* f = fopen(tmp, "wb");
    if (f == NULL) return -1;
    fputc(r == ncclSuccess ? 'K' : 'F', f);
    fwrite(id->internal, 1, sizeof id->internal, f);
    fclose(f);
    if (rename(tmp, path) != 0) return -1;
    if (r != ncclSuccess) fprintf(stderr, "[0] ncclGetUniqueId: %s\n", ncclGetErrorString(r));
    return r == ncclSuccess ? 0 : -1;
  }
  int wait_ms = EnvInt("NCCL_APP_WAIT_S", 60) * 1000;
  for (int waited = 0; waited < wait_ms; waited += 10) {
    FILE* f = fopen(path, "rb");
    if (f != NULL) {
      int ok =
          fgetc(f) == 'K' && fread(id->internal, 1, sizeof id->internal, f) == sizeof id->internal;
      fclose(f);
      return ok ? 0 : -1;
    }
    struct timespec ts = {0, 10 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
  fprintf(stderr, "[%d] no id in %s after %d s\n", g_rank, path, wait_ms / 1000);
  return -1;
}

int main(void) {
  g_rank = EnvInt("RANK", -1);
  g_nranks = EnvInt("WORLD_SIZE", -1);
  const char* id_file = getenv("NCCL_APP_ID_FILE");
  if (g_rank < 0 || g_nranks < 1 || g_rank >= g_nranks || id_file == NULL) {
    fprintf(stderr, "usage: RANK=r WORLD_SIZE=n NCCL_APP_ID_FILE=path nccl_app\n");
    return kUsage;
  }
  int version = 0;
  ncclGetVersion(&version);
  int sieve = dlsym(RTLD_DEFAULT, "sieveGetVersion") != NULL;
  printf("[%d] served by %s (ncclGetVersion %d)\n", g_rank, sieve ? "Sieve" : "NCCL", version);
  fflush(stdout);

  ncclUniqueId id;
  ncclComm_t comm = NULL;
  ncclResult_t r = ncclInternalError;
  if (ShareId(id_file, &id) == 0) r = ncclCommInitRank(&comm, g_nranks, id, g_rank);
  if (r != ncclSuccess) {
    printf("[%d] init failed: %s: %s\n", g_rank, ncclGetErrorString(r), ncclGetLastError(NULL));
    return kInitFailed;
  }
  int steps = EnvInt("NCCL_APP_GRADIENT_STEPS", 0);
  if (steps > 0)
    RunGradientSteps(comm, steps);
  else
    RunAll(comm);
  Ok("ncclCommFinalize", ncclCommFinalize(comm), comm);
  Ok("ncclCommDestroy", ncclCommDestroy(comm), NULL);
  printf("[%d] %s\n", g_rank, g_wrong == 0 ? "all collectives correct" : "WRONG RESULTS");
  return g_wrong == 0 ? kPass : kWrong;
}
