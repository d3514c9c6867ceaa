/* c_api_test: the public header compiles as C11 and the API links and behaves
 * from C: NCCL-compatible enum values, argument errors, and a 1-rank communicator. */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sieve.h"

static int g_passed = 0;
static int g_failed = 0;

static void Check(int ok, const char* what, const char* file, int line) {
  if (ok) {
    ++g_passed;
  } else {
    ++g_failed;
    fprintf(stderr, "c_api_test: FAILED at %s:%d: %s\n", file, line, what);
  }
}

#define CHECK(cond) Check((cond) ? 1 : 0, #cond, __FILE__, __LINE__)
#define CHECK_EQ(a, b)                                                                       \
  do {                                                                                       \
    long long a_ = (long long)(a), b_ = (long long)(b);                                      \
    if (a_ != b_) fprintf(stderr, "c_api_test:   %s = %lld, expected %lld\n", #a, a_, b_);   \
    Check(a_ == b_, #a " == " #b, __FILE__, __LINE__);                                       \
  } while (0)
/* A failed call's message must be non-empty and contain `word`. */
#define CHECK_MSG(comm, word)                                                                \
  do {                                                                                       \
    const char* m_ = sieveGetLastError(comm);                                                \
    int ok_ = m_ != NULL && m_[0] != '\0' && strstr(m_, word) != NULL;                       \
    if (!ok_) fprintf(stderr, "c_api_test:   last error \"%s\" lacks \"%s\"\n",              \
                      m_ ? m_ : "(null)", word);                                             \
    Check(ok_, "sieveGetLastError(" #comm ") mentions \"" word "\"", __FILE__, __LINE__);    \
  } while (0)

static void TestEnumValues(void) {
  CHECK_EQ(sieveSuccess, 0);
  CHECK_EQ(sieveUnhandledCudaError, 1);
  CHECK_EQ(sieveSystemError, 2);
  CHECK_EQ(sieveInternalError, 3);
  CHECK_EQ(sieveInvalidArgument, 4);
  CHECK_EQ(sieveInvalidUsage, 5);
  CHECK_EQ(sieveRemoteError, 6);
  CHECK_EQ(sieveInProgress, 7);
  CHECK_EQ(sieveNumResults, 8);

  CHECK_EQ(sieveInt8, 0);
  CHECK_EQ(sieveChar, 0);
  CHECK_EQ(sieveUint8, 1);
  CHECK_EQ(sieveInt32, 2);
  CHECK_EQ(sieveInt, 2);
  CHECK_EQ(sieveUint32, 3);
  CHECK_EQ(sieveInt64, 4);
  CHECK_EQ(sieveUint64, 5);
  CHECK_EQ(sieveFloat16, 6);
  CHECK_EQ(sieveHalf, 6);
  CHECK_EQ(sieveFloat32, 7);
  CHECK_EQ(sieveFloat, 7);
  CHECK_EQ(sieveFloat64, 8);
  CHECK_EQ(sieveDouble, 8);
  CHECK_EQ(sieveBfloat16, 9);
  CHECK_EQ(sieveNumTypes, 10);

  CHECK_EQ(sieveSum, 0);
  CHECK_EQ(sieveProd, 1);
  CHECK_EQ(sieveMax, 2);
  CHECK_EQ(sieveMin, 3);
  CHECK_EQ(sieveAvg, 4);
  CHECK_EQ(sieveNumOps, 5);

  CHECK_EQ(sizeof(sieveUniqueId), 128);
  CHECK_EQ(SIEVE_UNIQUE_ID_BYTES, 128);
  CHECK_EQ(SIEVE_UNIQUE_ID_STRING_BYTES, 257);
  CHECK_EQ(SIEVE_VERSION_CODE, SIEVE_MAJOR * 10000 + SIEVE_MINOR * 100 + SIEVE_PATCH);
}

static void TestVersionAndErrorStrings(void) {
  int version = -1;
  CHECK_EQ(sieveGetVersion(&version), sieveSuccess);
  CHECK_EQ(version, SIEVE_VERSION_CODE);
  for (int r = 0; r <= 8; ++r) {
    const char* s = sieveGetErrorString((sieveResult_t)r);
    CHECK(s != NULL && s[0] != '\0');
  }
  const char* unknown = sieveGetErrorString((sieveResult_t)99);
  CHECK(unknown != NULL && unknown[0] != '\0');
  /* Distinct codes get distinct descriptions. */
  CHECK(strcmp(sieveGetErrorString(sieveInvalidArgument),
               sieveGetErrorString(sieveInvalidUsage)) != 0);
  CHECK(strcmp(sieveGetErrorString(sieveSuccess), sieveGetErrorString(sieveRemoteError)) != 0);
}

static void TestErrorsWithoutComm(void) {
  float buf[5] = {1.0f, 2.0f, 3.0f, 4.0f, 5.0f};
  int n = -7;
  sieveComm_t comm = NULL;

  CHECK_EQ(sieveGetVersion(NULL), sieveInvalidArgument);
  CHECK_MSG(NULL, "version");

  CHECK_EQ(sieveCommCount(NULL, &n), sieveInvalidArgument);
  CHECK_EQ(n, -7);
  CHECK_MSG(NULL, "comm");
  CHECK_EQ(sieveCommUserRank(NULL, &n), sieveInvalidArgument);

  CHECK_EQ(sieveAllReduce(buf, buf, 5, sieveFloat, sieveSum, NULL, NULL), sieveInvalidArgument);
  CHECK_MSG(NULL, "comm");
  CHECK_EQ(sieveBroadcast(buf, buf, 5, sieveFloat, 0, NULL, NULL), sieveInvalidArgument);

  CHECK_EQ(sieveCommInitAll(&comm, 2, NULL), sieveInvalidUsage);
  CHECK_MSG(NULL, "sieveCommInitAll");
  CHECK(comm == NULL);

  sieveUniqueId id;
  memset(&id, 0x5a, sizeof(id));
  CHECK(sieveUniqueIdFromString("xyz", &id) != sieveSuccess);
  CHECK_MSG(NULL, "unique id");
  char bad[SIEVE_UNIQUE_ID_STRING_BYTES];
  memset(bad, 'a', sizeof(bad) - 1);
  bad[sizeof(bad) - 1] = '\0';
  bad[100] = 'g';
  CHECK(sieveUniqueIdFromString(bad, &id) != sieveSuccess);
  CHECK(sieveUniqueIdFromString(NULL, &id) != sieveSuccess);
}

/* Sets `name` to `value` unless it is already set (ctest sets both). */
static void DefaultEnv(const char* name, const char* value) {
  if (getenv(name) == NULL) setenv(name, value, 0);
}

static int SameFloats(const float* a, const float* b, int n) {
  for (int i = 0; i < n; ++i)
    if (a[i] != b[i]) return 0;
  return 1;
}

static void TestUniqueIdText(const sieveUniqueId* id) {
  char text[SIEVE_UNIQUE_ID_STRING_BYTES];
  memset(text, '#', sizeof(text));
  CHECK_EQ(sieveUniqueIdToString(id, text, sizeof(text)), sieveSuccess);
  CHECK_EQ(strlen(text), 2 * SIEVE_UNIQUE_ID_BYTES);
  CHECK(strspn(text, "0123456789abcdefABCDEF") == 2 * SIEVE_UNIQUE_ID_BYTES);
  sieveUniqueId back;
  memset(&back, 0, sizeof(back));
  CHECK_EQ(sieveUniqueIdFromString(text, &back), sieveSuccess);
  CHECK(memcmp(&back, id, sizeof(back)) == 0);
  /* Too small a buffer is refused. */
  char small[SIEVE_UNIQUE_ID_STRING_BYTES - 1];
  CHECK_EQ(sieveUniqueIdToString(id, small, sizeof(small)), sieveInvalidArgument);
}

static void TestOneRankComm(void) {
  DefaultEnv("SIEVE_SOCKET_IFNAME", "lo");
  DefaultEnv("UCX_NET_DEVICES", "lo");

  sieveUniqueId id;
  memset(&id, 0, sizeof(id));
  sieveResult_t r = sieveGetUniqueId(&id);
  CHECK_EQ(r, sieveSuccess);
  if (r != sieveSuccess) {
    fprintf(stderr, "c_api_test:   sieveGetUniqueId: %s\n", sieveGetLastError(NULL));
    return;
  }
  int nonzero = 0;
  for (size_t i = 0; i < sizeof(id.internal); ++i) nonzero |= id.internal[i] != 0;
  CHECK(nonzero);
  TestUniqueIdText(&id);

  sieveComm_t comm = NULL;
  r = sieveCommInitRank(&comm, 1, id, 0);
  CHECK_EQ(r, sieveSuccess);
  if (r != sieveSuccess || comm == NULL) {
    fprintf(stderr, "c_api_test:   sieveCommInitRank: %s\n", sieveGetLastError(NULL));
    return;
  }

  int count = -1, rank = -1;
  CHECK_EQ(sieveCommCount(comm, &count), sieveSuccess);
  CHECK_EQ(count, 1);
  CHECK_EQ(sieveCommUserRank(comm, &rank), sieveSuccess);
  CHECK_EQ(rank, 0);
  CHECK_EQ(sieveCommCount(comm, NULL), sieveInvalidArgument);

  const float input[5] = {1.5f, -2.25f, 3e5f, 7.0f, 0.125f};
  float buf[5], out[5];
  /* In place: with one rank the sum is the input. */
  memcpy(buf, input, sizeof(buf));
  CHECK_EQ(sieveAllReduce(buf, buf, 5, sieveFloat32, sieveSum, comm, NULL), sieveSuccess);
  CHECK(SameFloats(buf, input, 5));
  /* Out of place: recvbuff is overwritten, sendbuff untouched. */
  for (int i = 0; i < 5; ++i) out[i] = -999.0f;
  memcpy(buf, input, sizeof(buf));
  CHECK_EQ(sieveAllReduce(buf, out, 5, sieveFloat32, sieveSum, comm, NULL), sieveSuccess);
  CHECK(SameFloats(out, input, 5));
  CHECK(SameFloats(buf, input, 5));
  for (int i = 0; i < 5; ++i) out[i] = -999.0f;
  CHECK_EQ(sieveAllReduce(input, out, 5, sieveFloat, sieveMax, comm, NULL), sieveSuccess);
  CHECK(SameFloats(out, input, 5));
  for (int i = 0; i < 5; ++i) out[i] = -999.0f;
  CHECK_EQ(sieveAllReduce(input, out, 5, sieveFloat, sieveAvg, comm, NULL), sieveSuccess);
  CHECK(SameFloats(out, input, 5));
  int ints[3] = {-4, 9, 123456}, iout[3] = {0, 0, 0};
  CHECK_EQ(sieveAllReduce(ints, iout, 3, sieveInt32, sieveProd, comm, NULL), sieveSuccess);
  CHECK(iout[0] == -4 && iout[1] == 9 && iout[2] == 123456);
  for (int i = 0; i < 5; ++i) out[i] = -999.0f;
  CHECK_EQ(sieveBroadcast(input, out, 5, sieveFloat, 0, comm, NULL), sieveSuccess);
  CHECK(SameFloats(out, input, 5));
  /* count 0 with NULL buffers is a no-op, as in NCCL. */
  CHECK_EQ(sieveAllReduce(NULL, NULL, 0, sieveFloat, sieveSum, comm, NULL), sieveSuccess);

  /* Argument errors on a live communicator. */
  memcpy(buf, input, sizeof(buf));
  CHECK_EQ(sieveAllReduce(buf, out, 5, (sieveDataType_t)42, sieveSum, comm, NULL),
           sieveInvalidArgument);
  CHECK_MSG(comm, "datatype");
  CHECK_MSG(NULL, "datatype");
  CHECK_EQ(sieveAllReduce(buf, out, 5, sieveFloat, (sieveRedOp_t)17, comm, NULL),
           sieveInvalidArgument);
  CHECK_MSG(comm, "op");
  CHECK_EQ(sieveAllReduce(buf, NULL, 5, sieveFloat, sieveSum, comm, NULL), sieveInvalidArgument);
  CHECK_MSG(comm, "recvbuff");
  CHECK_EQ(sieveAllReduce(NULL, out, 5, sieveFloat, sieveSum, comm, NULL), sieveInvalidArgument);
  CHECK_MSG(comm, "sendbuff");
  CHECK_EQ(sieveBroadcast(buf, out, 5, sieveFloat, 3, comm, NULL), sieveInvalidArgument);
  CHECK_MSG(comm, "root");
  CHECK_EQ(sieveBroadcast(buf, out, 5, sieveFloat, -1, comm, NULL), sieveInvalidArgument);
  CHECK_EQ(sieveReduce(buf, out, 5, sieveFloat, sieveSum, 1, comm, NULL), sieveInvalidArgument);
  CHECK(SameFloats(buf, input, 5));

  /* The communicator survives argument errors. */
  sieveResult_t async = sieveInternalError;
  CHECK_EQ(sieveCommGetAsyncError(comm, &async), sieveSuccess);
  CHECK_EQ(async, sieveSuccess);
  for (int i = 0; i < 5; ++i) out[i] = -999.0f;
  CHECK_EQ(sieveAllReduce(buf, out, 5, sieveFloat, sieveSum, comm, NULL), sieveSuccess);
  CHECK(SameFloats(out, input, 5));
  memcpy(buf, input, sizeof(buf));
  CHECK_EQ(sieveAllReduce(buf, buf, 5, sieveFloat, sieveMin, comm, NULL), sieveSuccess);
  CHECK(SameFloats(buf, input, 5));

  CHECK_EQ(sieveCommDestroy(comm), sieveSuccess);
}

/* Polls a non-blocking communicator until it leaves sieveInProgress (bounded: 60 s). */
static sieveResult_t Poll(sieveComm_t comm) {
  sieveResult_t async = sieveInProgress;
  for (long i = 0; i < 600000 && async == sieveInProgress; ++i) {
    if (sieveCommGetAsyncError(comm, &async) != sieveSuccess) return sieveInternalError;
    if (async == sieveInProgress) {
      struct timespec ts = {0, 100000};
      nanosleep(&ts, NULL);
    }
  }
  return async;
}

/* sieveConfig_t from C: bad configs are refused naming what is wrong; a non-blocking one-rank
 * communicator inits and reduces through InProgress and polling. */
static void TestConfig(void) {
  sieveUniqueId id;
  if (sieveGetUniqueId(&id) != sieveSuccess) {
    CHECK(0);
    return;
  }
  sieveComm_t comm = NULL;
  sieveConfig_t config = SIEVE_CONFIG_INITIALIZER;
  CHECK_EQ(config.blocking, SIEVE_CONFIG_UNDEF_INT);
  CHECK(config.commName == NULL);
  config.magic = 0;
  CHECK_EQ(sieveCommInitRankConfig(&comm, 1, id, 0, &config), sieveInvalidArgument);
  CHECK_MSG(NULL, "SIEVE_CONFIG_INITIALIZER");
  config.magic = SIEVE_CONFIG_MAGIC;
  config.size = 8;
  CHECK_EQ(sieveCommInitRankConfig(&comm, 1, id, 0, &config), sieveInvalidArgument);
  CHECK_MSG(NULL, "size");
  config.size = sizeof(config);
  config.version = 99;
  CHECK_EQ(sieveCommInitRankConfig(&comm, 1, id, 0, &config), sieveInvalidArgument);
  CHECK_MSG(NULL, "version");
  config.version = SIEVE_VERSION_CODE;
  config.blocking = 2;
  CHECK_EQ(sieveCommInitRankConfig(&comm, 1, id, 0, &config), sieveInvalidArgument);
  CHECK_MSG(NULL, "blocking");
  CHECK(comm == NULL);

  config.blocking = 0;
  config.commName = "c-api";
  sieveResult_t r = sieveCommInitRankConfig(&comm, 1, id, 0, &config);
  CHECK_EQ(r, sieveInProgress);
  if (r != sieveInProgress || comm == NULL) return;
  CHECK_EQ(Poll(comm), sieveSuccess);
  int rank = -1;
  CHECK_EQ(sieveCommUserRank(comm, &rank), sieveSuccess);
  CHECK_EQ(rank, 0);
  const double input[3] = {2.5, -1.0, 1e10};
  double out[3] = {0, 0, 0};
  CHECK_EQ(sieveAllReduce(input, out, 3, sieveFloat64, sieveSum, comm, NULL), sieveInProgress);
  CHECK_EQ(Poll(comm), sieveSuccess);
  CHECK(memcmp(out, input, sizeof(out)) == 0);
  /* Waiting instead of polling: no limit, then (nothing pending) a zero timeout. */
  memset(out, 0, sizeof(out));
  CHECK_EQ(sieveAllReduce(input, out, 3, sieveFloat64, sieveMax, comm, NULL), sieveInProgress);
  sieveResult_t waited = sieveInProgress;
  CHECK_EQ(sieveCommWaitAsyncError(comm, -1, &waited), sieveSuccess);
  CHECK_EQ(waited, sieveSuccess);
  CHECK(memcmp(out, input, sizeof(out)) == 0);
  waited = sieveInProgress;
  CHECK_EQ(sieveCommWaitAsyncError(comm, 0, &waited), sieveSuccess);
  CHECK_EQ(waited, sieveSuccess);
  CHECK_EQ(sieveCommWaitAsyncError(comm, 10, NULL), sieveInvalidArgument);
  CHECK_MSG(NULL, "asyncError");
  CHECK_EQ(sieveCommWaitAsyncError(NULL, 10, &waited), sieveInvalidArgument);
  /* A blocking split of a non-blocking communicator is ready on return. */
  sieveComm_t sub = NULL;
  config.blocking = 1;
  CHECK_EQ(sieveCommSplitConfig(comm, 0, 0, &sub, &config), sieveSuccess);
  CHECK(sub != NULL);
  if (sub != NULL) CHECK_EQ(sieveCommDestroy(sub), sieveSuccess);
  /* Without a config the split inherits non-blocking. */
  CHECK_EQ(sieveCommSplit(comm, 0, 0, &sub), sieveInProgress);
  CHECK(sub != NULL);
  if (sub != NULL) {
    CHECK_EQ(Poll(sub), sieveSuccess);
    CHECK_EQ(Poll(comm), sieveSuccess);
    CHECK_EQ(sieveCommDestroy(sub), sieveSuccess);
  }
  CHECK_EQ(sieveCommDestroy(comm), sieveSuccess);
}

int main(void) {
  TestEnumValues();
  TestVersionAndErrorStrings();
  TestErrorsWithoutComm();
  TestOneRankComm();
  TestConfig();
  printf("c_api_test: %d passed, %d failed\n", g_passed, g_failed);
  if (g_failed != 0) {
    fprintf(stderr, "c_api_test: %d check(s) failed\n", g_failed);
    return 1;
  }
  return 0;
}
