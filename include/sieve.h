/* sieve.h — the public C API of Sieve, a collective-communication library for
 * data-parallel training on bandwidth-limited links.
 *
 * It mirrors NCCL's dense API name for name and value for value, so an NCCL
 * program ports by renaming `nccl` to `sieve`. Plain C99; no CUDA headers needed.
 *
 * Conventions (as in NCCL):
 *  - Every call returns a sieveResult_t. On failure, sieveGetLastError() gives a
 *    message saying what was wrong (per thread; the communicator's copy is
 *    returned when a communicator is passed).
 *  - Every rank of a communicator calls collectives in the same order. Every call takes part
 *    in that order and in the call's agreement, including a call with count 0 (it moves no
 *    data; its buffers may be NULL and are not looked at, so it runs as a host call even when
 *    they are device memory): ranks that pass different arguments (count, datatype, op, root,
 *    mode parameters) all fail with sieveInvalidUsage naming the field and the ranks, and the
 *    communicator is then unusable.
 *  - Host buffers with a NULL stream: the call returns when the collective is
 *    complete and the output buffer holds the result (on a blocking
 *    communicator; see "Non-blocking communicators" below).
 *  - A communicator is used by one thread at a time; sieveCommAbort,
 *    sieveCommGetAsyncError and sieveCommWaitAsyncError may be called from any thread. A call
 *    made while another thread is in a call on the same communicator returns sieveInvalidUsage
 *    at once and does nothing (its message is in sieveGetLastError(NULL) of the calling thread).
 *  - Handles (communicators, masks, layouts) are checked against the live ones before use: a
 *    destroyed, deregistered or made-up handle is sieveInvalidArgument, never dereferenced, and
 *    a handle value is never reused for a later object.
 *  - Outputs of a failed collective are undefined. After sieveRemoteError or
 *    sieveSystemError the communicator is unusable: destroy or abort it.
 */
#ifndef SIEVE_H_
#define SIEVE_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SIEVE_MAJOR 0
#define SIEVE_MINOR 1
#define SIEVE_PATCH 0
/* Same encoding as NCCL_VERSION_CODE for versions >= 2.9: X*10000 + Y*100 + Z. */
#define SIEVE_VERSION_CODE (SIEVE_MAJOR * 10000 + SIEVE_MINOR * 100 + SIEVE_PATCH)

/* Opaque communicator handle. */
typedef struct sieveComm* sieveComm_t;

/* ABI-compatible with cudaStream_t; NULL means "host, blocking". */
typedef struct CUstream_st* sieveStream_t;

#define SIEVE_UNIQUE_ID_BYTES 128
typedef struct {
  char internal[SIEVE_UNIQUE_ID_BYTES];
} sieveUniqueId;

/* Result codes: same values as ncclResult_t. */
typedef enum {
  sieveSuccess = 0,
  sieveUnhandledCudaError = 1,
  sieveSystemError = 2,
  sieveInternalError = 3,
  sieveInvalidArgument = 4,
  sieveInvalidUsage = 5,
  sieveRemoteError = 6,
  sieveInProgress = 7,
  sieveNumResults = 8
} sieveResult_t;

/* Reduction operations: same values as ncclRedOp_t. */
typedef enum {
  sieveSum = 0,
  sieveProd = 1,
  sieveMax = 2,
  sieveMin = 3,
  sieveAvg = 4,
  sieveNumOps = 5
} sieveRedOp_t;

/* Data types: same values as ncclDataType_t. float16/bfloat16 accumulate in float32. */
typedef enum {
  sieveInt8 = 0,
  sieveChar = 0,
  sieveUint8 = 1,
  sieveInt32 = 2,
  sieveInt = 2,
  sieveUint32 = 3,
  sieveInt64 = 4,
  sieveUint64 = 5,
  sieveFloat16 = 6,
  sieveHalf = 6,
  sieveFloat32 = 7,
  sieveFloat = 7,
  sieveFloat64 = 8,
  sieveDouble = 8,
  sieveBfloat16 = 9,
  sieveNumTypes = 10
} sieveDataType_t;

/* ---- Version and errors ------------------------------------------------- */

/* Writes SIEVE_VERSION_CODE of the loaded library to *version. */
sieveResult_t sieveGetVersion(int* version);

/* A static string describing a result code. Never NULL. */
const char* sieveGetErrorString(sieveResult_t result);

/* The message of the most recent failure: of `comm` when comm is not NULL,
 * else of the calling thread. Never NULL; "" when there was none. */
const char* sieveGetLastError(sieveComm_t comm);

/* The communicator's asynchronous error state: sieveSuccess while healthy,
 * sieveRemoteError/sieveSystemError after a peer failure or timeout; sieveInProgress while a
 * non-blocking operation is pending (then its error, if it failed). */
sieveResult_t sieveCommGetAsyncError(sieveComm_t comm, sieveResult_t* asyncError);

/* Sieve extension: sieveCommGetAsyncError after sleeping until the communicator's
 * non-blocking work is done or timeoutMs milliseconds passed (then sieveInProgress; negative:
 * no limit, 0: at once). Lets a thread complete non-blocking operations without polling. Any
 * thread may call it; sieveCommAbort from another thread ends the wait (sieveInvalidUsage). */
sieveResult_t sieveCommWaitAsyncError(sieveComm_t comm, int timeoutMs, sieveResult_t* asyncError);

/* ---- Communicators ------------------------------------------------------- */

/* Creates a new id: starts a bootstrap listener in this process (a thread that
 * lives until every rank has joined or SIEVE_TIMEOUT passes) and writes its
 * address and a random secret into *uniqueId. Hand the id to every rank. */
sieveResult_t sieveGetUniqueId(sieveUniqueId* uniqueId);

/* Joins rank `rank` of `nranks` to the communicator named by commId.
 * Collective over all ranks; fails within SIEVE_TIMEOUT if a rank is missing. */
sieveResult_t sieveCommInitRank(sieveComm_t* comm, int nranks, sieveUniqueId commId, int rank);

/* NCCL's one process driving several devices. Not supported by any build: always
 * returns sieveInvalidUsage and leaves *comm untouched. NCCL's contract has one
 * thread issue every rank's calls inside a group, which Sieve cannot serve (a group's
 * calls run one after another, and a host-buffer collective returns only when every
 * rank has joined it). Start one process per rank (sieve-run) and call
 * sieveCommInitRank. */
sieveResult_t sieveCommInitAll(sieveComm_t* comm, int ndev, const int* devlist);

/* ---- Communicator configuration and non-blocking communicators ------------
 *
 * sieveConfig_t is versioned like ncclConfig_t: start from SIEVE_CONFIG_INITIALIZER and set the
 * fields you need; a config with another magic, a size smaller than this header's or a version
 * older than the first with configs is refused (sieveInvalidArgument).
 *
 * Non-blocking communicators (blocking = 0), as NCCL defines them:
 *  - sieveCommInitRankConfig / sieveCommSplitConfig return sieveInProgress at once with a valid
 *    handle; the communicator is created on its own background thread.
 *  - Collectives and send/recv on host buffers (NULL stream) are queued on that thread and
 *    return sieveInProgress; so does sieveGroupEnd for a group on a non-blocking communicator
 *    (such a group may use no other communicator). Until the operation is done its output
 *    buffers must not be read and its input buffers must not be written.
 *  - sieveCommGetAsyncError reports sieveInProgress while anything is pending, then
 *    sieveSuccess, or the error of what failed (sieveGetLastError(comm) says what; after a
 *    failure the communicator is unusable, as after an async error).
 *  - After a call returned sieveInProgress, poll sieveCommGetAsyncError until it no longer
 *    reports sieveInProgress before the next call on that communicator. Only
 *    sieveCommGetAsyncError, sieveGetLastError, sieveCommCount, sieveCommUserRank (known once
 *    an init has its rank; a split's only when done), sieveCommAbort and sieveCommDestroy may
 *    be called meanwhile; any other call returns sieveInvalidUsage (nothing is queued). A
 *    non-blocking split also keeps the parent communicator in progress until it is done.
 *  - sieveCommAbort returns within 5 s and stops the background work; sieveCommDestroy waits
 *    for pending work (or its error) and returns sieveSuccess.
 *  - Device-buffer collectives return after enqueueing on the stream, as on blocking
 *    communicators; mask and layout registrations block as on blocking communicators.
 * Blocking communicators (the default) have no background thread. */
#define SIEVE_CONFIG_MAGIC 0x53435647u /* "SCVG" */
/* The first SIEVE_VERSION_CODE with configs; a config's version must be at least this. */
#define SIEVE_CONFIG_VERSION_MIN 100
/* A field left at this value takes its default. */
#define SIEVE_CONFIG_UNDEF_INT (-2147483647 - 1)
typedef struct {
  size_t size;           /* sizeof(sieveConfig_t) of the caller's header */
  unsigned int magic;    /* SIEVE_CONFIG_MAGIC */
  unsigned int version;  /* SIEVE_VERSION_CODE of the caller's header */
  int blocking;          /* 1: calls return when done; 0: non-blocking (above); undefined:
                          * 1 for an init, the parent's for a split */
  const char* commName;  /* optional name for logs (copied); NULL: none */
} sieveConfig_t;
#define SIEVE_CONFIG_INITIALIZER                                                        \
  {                                                                                     \
    sizeof(sieveConfig_t), SIEVE_CONFIG_MAGIC, SIEVE_VERSION_CODE, SIEVE_CONFIG_UNDEF_INT, \
        NULL                                                                            \
  }

/* sieveCommInitRank with a config (NULL: defaults, blocking). Non-blocking: returns
 * sieveInProgress with *comm set; a missing rank then ends the poll in an error within
 * SIEVE_TIMEOUT. Argument errors are returned at once either way. */
sieveResult_t sieveCommInitRankConfig(sieveComm_t* comm, int nranks, sieveUniqueId commId,
                                      int rank, const sieveConfig_t* config);

/* Sieve extension: creates the communicator from the launcher's environment:
 * sieve-run (SIEVE_RANK, SIEVE_NRANKS, SIEVE_UNIQUE_ID), torchrun-style
 * (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT) or Open MPI's mpirun
 * (OMPI_COMM_WORLD_RANK/SIZE with MASTER_ADDR/MASTER_PORT). */
sieveResult_t sieveCommInitFromEnv(sieveComm_t* comm);

/* Sieve extension: the text form of an id (256 hex digits plus NUL) and back. */
#define SIEVE_UNIQUE_ID_STRING_BYTES (2 * SIEVE_UNIQUE_ID_BYTES + 1)
sieveResult_t sieveUniqueIdToString(const sieveUniqueId* id, char* str, size_t len);
sieveResult_t sieveUniqueIdFromString(const char* str, sieveUniqueId* id);

/* Splits comm into sub-communicators, as ncclCommSplit: collective over every
 * rank of comm; ranks passing the same color join one new communicator, ordered
 * by key (then by their rank in comm). color SIEVE_SPLIT_NOCOLOR gives NULL.
 * The new communicators use the same SIEVE_* settings as a fresh init. */
#define SIEVE_SPLIT_NOCOLOR (-1)
sieveResult_t sieveCommSplit(sieveComm_t comm, int color, int key, sieveComm_t* newcomm);
/* sieveCommSplit with a config for the new communicator (NULL, or blocking undefined: the
 * parent's blocking mode). Non-blocking: returns sieveInProgress; *newcomm is set at once
 * (NULL for SIEVE_SPLIT_NOCOLOR) and both it and the parent are in progress until the split is
 * done. */
sieveResult_t sieveCommSplitConfig(sieveComm_t comm, int color, int key, sieveComm_t* newcomm,
                                   const sieveConfig_t* config);

/* Sieve extension for the NCCL shim (libsieve-nccl.so), called once per communicator it
 * creates: logs once per process at INFO "Sieve serving NCCL calls (mode M)" and writes M, the
 * SIEVE_NCCL_MODE comm was created with, to *mode (valid while comm lives). sieveCommInit*
 * already validated the mode: a value Sieve does not implement fails the init. */
sieveResult_t sieveCommServeNccl(sieveComm_t comm, const char** mode);

/* Per-communicator statistics since its creation (bytes this rank put on and
 * took off the wire for collectives and point-to-point, calls per mode). */
typedef struct {
  uint64_t bytes_sent;
  uint64_t bytes_received;
  uint64_t collectives;        /* collective calls that moved data */
  uint64_t masked_collectives; /* of which ran in masked mode */
  uint64_t dense_fallbacks;    /* masked steps redone dense (mask tracker) */
  uint64_t mask_mismatches;    /* mask registrations/steps where ranks disagreed */
  uint64_t subnet_collectives; /* sieveAllReduceSubnet / sieveAllReduceD2ft calls */
} sieveCounters_t;
sieveResult_t sieveCommGetCounters(sieveComm_t comm, sieveCounters_t* counters);

/* Frees the communicator. Pending operations (a non-blocking one's background work too) are
 * completed first. Calls on it still queued in an open group (of any thread) are dropped, not
 * run: that group's sieveGroupEnd issues its other calls and returns sieveInvalidUsage saying
 * how many were dropped. */
sieveResult_t sieveCommDestroy(sieveComm_t comm);

/* Frees the communicator without waiting for peers. Always succeeds locally;
 * may be called from another thread to make a blocked call return. Queued calls in an open
 * group are dropped as for sieveCommDestroy. */
sieveResult_t sieveCommAbort(sieveComm_t comm);

sieveResult_t sieveCommCount(const sieveComm_t comm, int* count);
sieveResult_t sieveCommUserRank(const sieveComm_t comm, int* rank);

/* ---- Elastic membership: revoke, shrink, grow, failed ranks (docs/membership.md) ----------
 *
 * After a failure (sieveRemoteError) the survivors agree on who failed, shrink to a new
 * communicator of the survivors and go on; new ranks join a running communicator with a grow.
 * A shrunk or grown communicator is a new one: masks and layouts of the parent must be
 * registered again on it (a parent's handle used on it is sieveInvalidArgument saying so);
 * error-feedback residuals, the mask tracker and the counters start afresh; the host layout is
 * learned anew; the SIEVE_* settings are the parent's (SIEVE_FAULT excepted). The parent stays
 * valid and must still be destroyed or aborted. */

/* As ncclCommRevoke (NCCL 2.28): stops every operation in flight on comm in every local thread
 * (a call blocked in another thread returns sieveRemoteError within about 0.2 s; queued
 * background and device work is dropped) and returns sieveSuccess once comm is quiescent, at
 * most about 5 s later. Afterwards only sieveCommShrink, sieveCommSplit (every rank of comm
 * takes part; it runs outside comm's call sequence, which the interruption may have left
 * different across ranks), the failed-rank queries, sieveCommDestroy and sieveCommAbort may be
 * called on comm; any other call is sieveInvalidUsage. Local: peers are not told. May be
 * called from any thread. revokeFlags must be SIEVE_REVOKE_DEFAULT. */
#define SIEVE_REVOKE_DEFAULT 0x00
sieveResult_t sieveCommRevoke(sieveComm_t comm, int revokeFlags);

/* As ncclCommShrink: every rank of comm not in excludeRanksList calls it with the same list;
 * they form *newcomm, ranked in their old order (ranks renumbered to fill the gaps). The
 * excluded ranks do not call it and are never waited for (they may be dead, frozen or busy).
 * comm may have failed. The lowest surviving rank hosts the new bootstrap root. Fails on every
 * calling rank, naming each rank's list, when the survivors' lists differ (a rank the others
 * exclude learns so); fails when a kept rank dies or stays silent for SIEVE_TIMEOUT.
 * shrinkFlags: SIEVE_SHRINK_DEFAULT, or SIEVE_SHRINK_ABORT: first sieveCommRevoke(comm) (use it
 * after a failure or with a call still blocked in another thread). config: NULL, or blocking
 * undefined, inherits comm's blocking mode; non-blocking: sieveInProgress as
 * sieveCommSplitConfig. The list may be unsorted; a duplicate, an out-of-range rank or this
 * rank itself is sieveInvalidArgument. */
#define SIEVE_SHRINK_DEFAULT 0x00
#define SIEVE_SHRINK_ABORT 0x01
sieveResult_t sieveCommShrink(sieveComm_t comm, const int* excludeRanksList, int excludeRanksCount,
                              sieveComm_t* newcomm, const sieveConfig_t* config, int shrinkFlags);

/* Sieve extension: the ranks this rank knows to have failed (connection reset or closed,
 * process gone), ascending, without any communication. Writes at most maxRanks of them to
 * ranks and their number to *nFailed. comm may have failed or been revoked. A frozen rank is
 * not found here (see sieveCommAgreeFailedRanks). */
sieveResult_t sieveCommGetFailedRanks(sieveComm_t comm, int* ranks, int maxRanks, int* nFailed);

/* Sieve extension: collective over the live ranks of comm (failed, revoked or healthy): every
 * caller gets the same ascending list of failed ranks, the list to pass to sieveCommShrink.
 * Each rank sends what it knows to every other in two rounds; a rank known dead is not waited
 * for, one that stays silent is counted failed after SIEVE_TIMEOUT, or after 1 s when some
 * rank's failure was a stall (a frozen rank: the live ones have reached this call by then).
 * A rank the others count failed gets sieveRemoteError. Output as sieveCommGetFailedRanks. */
sieveResult_t sieveCommAgreeFailedRanks(sieveComm_t comm, int* ranks, int maxRanks, int* nFailed);

/* As ncclCommGetUniqueId (NCCL 2.29): on one rank of a healthy comm, makes the id of a grow of
 * comm (starts its bootstrap root, which waits SIEVE_TIMEOUT for the grow's ranks, with a fresh
 * secret). Hand it to the new ranks; one unused id per communicator at a time. */
sieveResult_t sieveCommGetUniqueId(sieveComm_t comm, sieveUniqueId* uniqueId);

/* As ncclCommGrow (NCCL 2.29): makes *newcomm of nRanks ranks, comm's ranks keeping theirs.
 *  - existing ranks: collective over comm, at the same place in its call sequence: the rank
 *    that made the id passes it, the others NULL; rank = -1. Mismatched nRanks or not exactly
 *    one id fail on every rank (sieveInvalidUsage);
 *  - new ranks: comm = NULL, the id, their rank in [comm's size, nRanks).
 * The bootstrap authenticates every rank with the id's secret: a process without it is refused
 * and the grow goes on without it. config as for sieveCommShrink (new ranks: blocking unless
 * config says otherwise). */
sieveResult_t sieveCommGrow(sieveComm_t comm, int nRanks, const sieveUniqueId* uniqueId, int rank,
                            sieveComm_t* newcomm, const sieveConfig_t* config);

/* ---- Collectives (NCCL semantics; sendbuff == recvbuff means in place) ----
 * sendbuff and recvbuff are disjoint or in place (sendbuff == recvbuff; all-gather: sendbuff ==
 * recvbuff + rank*sendcount; reduce-scatter: recvbuff == sendbuff + rank*recvcount); any other
 * overlap is sieveInvalidArgument. This holds for every collective below. */

/* recvbuff[i] = op over ranks of sendbuff[i], on every rank. */
sieveResult_t sieveAllReduce(const void* sendbuff, void* recvbuff, size_t count,
                             sieveDataType_t datatype, sieveRedOp_t op, sieveComm_t comm,
                             sieveStream_t stream);

/* recvbuff = root's sendbuff, on every rank (sendbuff only read on root). */
sieveResult_t sieveBroadcast(const void* sendbuff, void* recvbuff, size_t count,
                             sieveDataType_t datatype, int root, sieveComm_t comm,
                             sieveStream_t stream);

/* recvbuff on root = op over ranks of sendbuff (recvbuff only written on root). */
sieveResult_t sieveReduce(const void* sendbuff, void* recvbuff, size_t count,
                          sieveDataType_t datatype, sieveRedOp_t op, int root, sieveComm_t comm,
                          sieveStream_t stream);

/* recvbuff[r*sendcount ...] = sendbuff of rank r. In place: sendbuff == recvbuff + rank*sendcount. */
sieveResult_t sieveAllGather(const void* sendbuff, void* recvbuff, size_t sendcount,
                             sieveDataType_t datatype, sieveComm_t comm, sieveStream_t stream);

/* recvbuff on rank r = op over ranks of sendbuff[r*recvcount ... (r+1)*recvcount). */
sieveResult_t sieveReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount,
                                 sieveDataType_t datatype, sieveRedOp_t op, sieveComm_t comm,
                                 sieveStream_t stream);

/* Point to point. Sends and receives between a pair of ranks match in order, zero-byte ones
 * included (as in NCCL). Outside a group each call returns when its transfer is complete.
 * A receive whose size differs from its matching send (shorter or longer) fails on the
 * receiving rank with sieveInvalidUsage naming the peer and both sizes; the message is
 * consumed and the communicator stays usable. The sending rank is not told: its call
 * succeeds once its data has left. */
sieveResult_t sieveSend(const void* sendbuff, size_t count, sieveDataType_t datatype, int peer,
                        sieveComm_t comm, sieveStream_t stream);
sieveResult_t sieveRecv(void* recvbuff, size_t count, sieveDataType_t datatype, int peer,
                        sieveComm_t comm, sieveStream_t stream);

/* Groups: calls between GroupStart and GroupEnd are issued together at GroupEnd
 * (collectives in call order, then all sends and receives at once), so
 * send/recv patterns such as ring exchanges and all-to-all cannot deadlock.
 * Errors of grouped calls are returned by sieveGroupEnd. A collective, send or
 * receive refused inside a group (bad argument) fails the whole group, as in NCCL:
 * sieveGroupEnd runs none of its calls and returns sieveInvalidUsage naming the
 * refused call (the peers' matching calls then fail within the timeout). Groups nest. */
sieveResult_t sieveGroupStart(void);
sieveResult_t sieveGroupEnd(void);

/* ---- Masked sparse all-reduce (PacTrain) --------------------------------- */

/* A registered mask: which of `count` elements take part in masked all-reduces. */
typedef struct sieveMask* sieveMask_t;

typedef enum {
  sieveMaskBitmap = 0, /* bit j of byte j/8 (LSB first) set: element j kept */
  sieveMaskBytes = 1   /* one byte per element, non-zero: element j kept */
} sieveMaskFormat_t;

typedef enum {
  sieveMaskStrict = 0, /* every rank must pass the same mask, else an error naming the ranks */
  sieveMaskUnion = 1   /* the ranks agree on the union (OR) of their masks */
} sieveMaskPolicy_t;

/* Collective over comm: registers this rank's mask for buffers of `count`
 * elements (at most 2^32, else sieveInvalidArgument). Agreement is checked with a hash
 * compared across ranks. */
sieveResult_t sieveMaskRegister(sieveComm_t comm, const void* mask, sieveMaskFormat_t format,
                                size_t count, sieveMaskPolicy_t policy, sieveMask_t* handle);
/* Frees a mask; using it afterwards is an error, not a crash. */
sieveResult_t sieveMaskDeregister(sieveMask_t handle);
/* Number of kept elements of the agreed mask. */
sieveResult_t sieveMaskNnz(sieveMask_t handle, size_t* nnz);

/* recvbuff[j] = op over ranks of sendbuff[j] where the mask keeps j, 0 elsewhere.
 * Only the kept elements travel. Same datatypes and ops as sieveAllReduce. */
sieveResult_t sieveAllReduceMasked(const void* sendbuff, void* recvbuff, size_t count,
                                   sieveDataType_t datatype, sieveRedOp_t op, sieveMask_t mask,
                                   sieveComm_t comm, sieveStream_t stream);

/* ---- Ternary quantized all-reduce ---------------------------------------- */

/* Per-call parameters of sieveAllReduceTernary. Every rank passes the same seed,
 * step and block_size; use a new step per call so the rounding noise is fresh. */
typedef struct {
  uint64_t seed;     /* with (rank, step), keys the Philox 4x32-10 stream */
  uint64_t step;     /* e.g. the training step */
  size_t block_size; /* elements per scale block; 0 = 2048; at most 2^34 */
  sieveMask_t mask;  /* NULL = dense; else only the kept elements are quantized and
                      * sent (packed first; Philox index j = position among kept
                      * elements, blocks over kept elements); the rest are 0 */
  int error_feedback; /* 1: keep this rank's residual e per buffer (sendbuff, count,
                       * datatype, mask) and send g + e: e = g + e_prev - s*q.
                       * s_b stays the gradients' (max |sendbuff|, not of g + e),
                       * so a g + e_prev above it is clipped (q = its sign) and e
                       * keeps the rest; each call reads the residual once.
                       * Costs 4 bytes per element per buffer until the
                       * communicator is destroyed. 0: off */
} sieveTernaryParams_t;

/* Unbiased stochastic ternary all-reduce (float32/float16/bfloat16; sum or avg).
 * Per block b of block_size elements, s_b = max over ranks of max |sendbuff| in b;
 * rank r sends q_r[j] = sign(g) * [u < |g| / s_b] in {-1, 0, +1}, u uniform in
 * [0, 1) with 32 bits of resolution from Philox (seed, r, step, j) (16 bits per
 * element, 16 more only when those tie), so P(q != 0) = |g| / s_b to within 2^-32;
 * Q[j] = sum_r q_r[j] is summed exactly (partial sums of k ranks travel in
 * ceil(log2(2k+1)) bits); recvbuff[j] = s_b * Q[j] (sum) or s_b * Q[j] / nranks
 * (avg), in float32, then rounded to datatype. count must be below 2^34.
 * Non-finite input: if any rank's block b holds a NaN or an infinity in
 * sendbuff, s_b is NaN on every rank and every
 * element of block b in recvbuff is NaN (under a mask: every kept element of the
 * block; masked-out elements stay 0), so a diverged job sees NaN, as with a
 * dense all-reduce. The call still succeeds. With error feedback the residuals
 * of that block become NaN too, so later calls on the same buffer keep giving
 * NaN there (residuals live as long as the communicator). A sent g + e_prev
 * that rounds to an infinity in the datatype is clipped like any value above
 * s_b; where the float32 sum itself overflows, that element's residual stays
 * infinite and it sends its sign at the scale from then on. */
sieveResult_t sieveAllReduceTernary(const void* sendbuff, void* recvbuff, size_t count,
                                    sieveDataType_t datatype, sieveRedOp_t op,
                                    const sieveTernaryParams_t* params, sieveComm_t comm,
                                    sieveStream_t stream);

/* ---- Quantized all-reduce with L levels ---------------------------------- */

/* The largest level count sieveAllReduceQuantized accepts (codes fit 8 bits). */
#define SIEVE_MAX_LEVELS 127

/* sieveAllReduceTernary with `levels` = L levels per sign (1 <= L <= SIEVE_MAX_LEVELS,
 * else sieveInvalidArgument; L = 1 is sieveAllReduceTernary bit for bit; L = 3, 7, 127
 * send about 3, 4 and 8 bits per element at the first hop). Per block b the agreed
 * scale s_b is the same; with y = L |g| / s_b computed in float32 as (|g| / s_b) * L,
 * rank r sends q_r[j] = sign(g) * (floor(y) + [u < y - floor(y)]) in [-L, L], u from the
 * same Philox (seed, r, step, j) stream with the same 32-bit resolution, so
 * E[s_b * q / L] = g (unbiased; variance (s_b / L)^2 f (1 - f), f = y - floor(y)).
 * Q[j] = sum_r q_r[j] is summed exactly: a partial sum of k ranks travels in
 * ceil(log2(2kL + 1)) bits. recvbuff[j] = (s_b * Q[j]) / L (sum) or
 * (s_b * Q[j]) / (nranks * L) (avg), in float32, then rounded to datatype. Every rank
 * passes the same levels (a mismatch is an error naming the field). Masks, error
 * feedback (residual e = g + e_prev - (s * q) / L) and the non-finite contract are
 * those of sieveAllReduceTernary, and so is the handling of device buffers (the
 * device kernels quantize at L levels with the same per-element formula). */
sieveResult_t sieveAllReduceQuantized(const void* sendbuff, void* recvbuff, size_t count,
                                      sieveDataType_t datatype, sieveRedOp_t op, int levels,
                                      const sieveTernaryParams_t* params, sieveComm_t comm,
                                      sieveStream_t stream);

/* levels = SIEVE_LEVELS_AUTO: the library chooses per call, the same on every rank,
 * between the dense all-reduce (sieveAllReduce's result; under params->mask,
 * sieveAllReduceMasked's) and L in {1, 3, 7, 15, 31, 63, 127} (then the call is
 * sieveAllReduceQuantized at that L, bit for bit): the least predicted time from the
 * link's rate (SIEVE_LINK_RATE, else a proven lower bound this communicator learned
 * from its own calls; the most compressed level until it has one), this machine's
 * kernel speed and count, within
 * ternary's variance, the most accurate choice within 10% of the fastest
 * (docs/modes.md, "auto"). Every rank passes SIEVE_LEVELS_AUTO (where a rank passes
 * an L instead, the call fails on every rank unless auto chose that L). Error feedback: a call done dense leaves the residual as it was, for the
 * next quantized call. Device buffers are staged and run on the host. Each change of
 * the choice for a count is logged at INFO (SIEVE_DEBUG=INFO). */
#define SIEVE_LEVELS_AUTO (-1)
/* What sieveCommGetAutoLevels reports for a call auto did dense. */
#define SIEVE_LEVELS_DENSE 0
/* The choice of this rank's latest SIEVE_LEVELS_AUTO call on comm (or on a
 * communicator served to NCCL with SIEVE_NCCL_MODE=auto), once it ran: an L, or
 * SIEVE_LEVELS_DENSE; -1 before any. */
sieveResult_t sieveCommGetAutoLevels(sieveComm_t comm, int* levels);

/* ---- Quantized reduce-scatter (sharded training) ------------------------- */

/* sieveReduceScatter of the quantized all-reduce: recvbuff (recvcount elements) of
 * rank r = elements [r * recvcount, (r + 1) * recvcount) of what sieveAllReduceQuantized
 * of every rank's whole sendbuff (recvcount * nranks elements) with the same levels and
 * params would give, bit for bit: per block b of block_size elements of sendbuff the
 * agreed scale s_b (max over ranks of max |g| in b), codes q in [-L, L] from Philox
 * (seed, rank, step, j) with j the index in sendbuff, the ring's integer partial sums
 * exact (k ranks in ceil(log2(2kL + 1)) bits), recvbuff[i] = (s_b * Q) / L (sum) or
 * (s_b * Q) / (nranks * L) (avg). Unmasked, each rank sends, per element of recvcount,
 * the sum over k = 1..nranks-1 of ceil(log2(2kL + 1)) bits (per ring message rounded
 * up to a byte), plus ceil(recvcount * nranks / block_size) float32 scales to every
 * peer: at 4 ranks 8 bits (L = 1) and 15 bits (L = 7) where the dense ring sends 96.
 * float32/float16/bfloat16, sum or avg; 1 <= levels <= SIEVE_MAX_LEVELS. In place when
 * recvbuff == sendbuff + rank * recvcount. params->mask, when set, is registered for
 * recvcount * nranks elements and applies to sendbuff as for the all-reduce (only kept
 * elements are quantized and travel; recvbuff is 0 where it drops). Error feedback
 * keeps a residual per quantized element of sendbuff. The non-finite contract is
 * sieveAllReduceTernary's. Device buffers are quantized on the stream (libsieve with
 * device kernels): only the scales, the codes and this rank's chunk's sums are staged;
 * masked calls (and a libsieve without kernels) stage sendbuff whole and quantize on
 * the host; either way the result is the host path's, bit for bit. A recvcount, op,
 * datatype, levels or params field that differs across ranks fails the call on every
 * rank. */
sieveResult_t sieveReduceScatterQuantized(const void* sendbuff, void* recvbuff, size_t recvcount,
                                          sieveDataType_t datatype, sieveRedOp_t op, int levels,
                                          const sieveTernaryParams_t* params, sieveComm_t comm,
                                          sieveStream_t stream);

/* ---- Quantized all-gather (sharded training) ----------------------------- */

/* Elements per scale block of sieveAllGatherQuantized. */
#define SIEVE_ALLGATHER_QUANT_BLOCK 256

/* sieveAllGather with each rank's shard sent as block-scaled `bits`-bit integers
 * (bits 8 or 4, else sieveInvalidArgument): per block b of SIEVE_ALLGATHER_QUANT_BLOCK
 * elements of a shard, s_b = m_b / Q in float32 (m_b = max |x| over the block, Q = 127
 * for 8 bits, 7 for 4), q = x / s_b rounded to nearest (even) and clamped to [-Q, Q],
 * and recvbuff gets q * s_b in float32 rounded to datatype, for every shard, this
 * rank's own included: every rank holds the same bytes. Error: every element y of
 * recvbuff is within |y - x| <= s_b / 2 + u (|x| + s_b) + 2^-25 of the sent x, with
 * u = 2^-22 (float32), 2^-10 (float16), 2^-7 (bfloat16), i.e. about m_b / 254 (8 bits)
 * or m_b / 14 (4 bits). A block holding a NaN or an infinity arrives as all NaN.
 * Each rank sends (nranks - 1) * (ceil(sendcount / 256) * 4 + ceil(sendcount * bits / 8))
 * bytes: about 1/4 (8 bits) or 1/8 (4 bits) of a float32 all-gather's. float32, float16
 * or bfloat16; in place when sendbuff == recvbuff + rank * sendcount. A sendcount,
 * datatype or bits that differs across ranks fails the call on every rank. Device
 * buffers are encoded and decoded on the stream (libsieve with device kernels: only
 * the encoded shards are staged), else staged whole and coded on the host; the same
 * bytes either way. */
sieveResult_t sieveAllGatherQuantized(const void* sendbuff, void* recvbuff, size_t sendcount,
                                      sieveDataType_t datatype, int bits, sieveComm_t comm,
                                      sieveStream_t stream);

/* ---- Top-k sparsified all-reduce ----------------------------------------- */

/* Each rank keeps the k = ceil(fraction * count) elements (at least 1 when
 * count > 0) of largest magnitude of g = sendbuff (+ its residual with error
 * feedback; ties keep the lower index, NaN counts as largest) and sends them as
 * (uint32 index, value as datatype) pairs: (nranks - 1) * k * (4 + element size)
 * bytes per rank on the wire, an all-gather over the ring. recvbuff[i] = sum over
 * ranks, in rank order in double, of the values kept at i (0 where no rank kept
 * i), divided by nranks for avg, rounded to datatype: the same bits on every
 * rank. float32/float16/bfloat16, sum or avg; 0 < fraction <= 1; count at most
 * 2^32; host buffers only (device buffers: sieveInvalidUsage). error_feedback 1:
 * keep this rank's residual per buffer (sendbuff, count, datatype): e = g - what
 * was sent, 4 bytes per element until the communicator is destroyed. Every rank
 * passes the same count, datatype, op, fraction and error_feedback (else every
 * rank fails, naming the field). */
sieveResult_t sieveAllReduceTopK(const void* sendbuff, void* recvbuff, size_t count,
                                 sieveDataType_t datatype, sieveRedOp_t op, double fraction,
                                 int error_feedback, sieveComm_t comm, sieveStream_t stream);

/* ---- Subnet layouts: SDP coverage averaging, D2FT subnet skipping -------- */

/* A registered subnet layout: segments that partition a buffer of `count`
 * elements, each held by a set of ranks. */
typedef struct sieveLayout* sieveLayout_t;

typedef struct {
  size_t offset;      /* first element of the segment */
  size_t length;      /* elements, > 0 */
  const int* holders; /* ranks holding the segment: ascending, no duplicates */
  int nholders;       /* 1..nranks */
} sieveSegment_t;

/* Every way of registering a layout bounds what it allocates: a layout has at most
 * SIEVE_LAYOUT_MAX_SEGMENTS segments and SIEVE_LAYOUT_MAX_HOLDERS holder entries (the sum of
 * nholders over its segments); beyond, the registration fails on every rank with
 * sieveInvalidArgument saying which limit (sieveLayoutEqualSubnets: nsubnets and
 * nsubnets * nranks). */
#define SIEVE_LAYOUT_MAX_SEGMENTS (1 << 20)
#define SIEVE_LAYOUT_MAX_HOLDERS (1 << 24)

/* Collective over comm: every rank passes the same segments, sorted by offset
 * and partitioning [0, count) (checked; a mismatch across ranks, or an invalid
 * layout on any rank, is an error on every rank naming the ranks). Costs one
 * all-gather of 32 bytes per rank. The layout belongs to comm. */
sieveResult_t sieveLayoutRegister(sieveComm_t comm, size_t count, const sieveSegment_t* segments,
                                  int nsegments, sieveLayout_t* layout);
/* Collective: a layout from an SDP mask matrix of nranks rows x nblocks bytes
 * (row r, byte b non-zero: rank r holds block b; block b = elements
 * [b*block_size, min((b+1)*block_size, count))). Runs of blocks with equal
 * holder sets become one segment. Every block needs at least one holder. */
sieveResult_t sieveLayoutFromMaskMatrix(sieveComm_t comm, const unsigned char* matrix,
                                        size_t nblocks, size_t block_size, size_t count,
                                        sieveLayout_t* layout);
/* Collective: nsubnets subnets of count/nsubnets elements (the last takes the
 * remainder; 1 <= nsubnets <= count), each held by every rank: the usual D2FT
 * layout. */
sieveResult_t sieveLayoutEqualSubnets(sieveComm_t comm, size_t count, int nsubnets,
                                      sieveLayout_t* layout);
sieveResult_t sieveLayoutNumSegments(sieveLayout_t layout, int* nsegments);
/* Frees a layout; using it afterwards is an error, not a crash. */
sieveResult_t sieveLayoutDeregister(sieveLayout_t layout);

/* SDP. For every segment with holders R that include this rank:
 * recvbuff = (1/|R|) * sum over r in R of sendbuff_r on the segment (a ring
 * among R; float16/bfloat16 add in float32 and round once per hop; the
 * division happens in the last combine). On segments this rank does not hold
 * recvbuff is not written, sendbuff is not read, and no bytes of them are sent
 * or received. float32, float16, bfloat16, float64 (else sieveInvalidArgument);
 * in place allowed. */
sieveResult_t sieveAllReduceSubnet(const void* sendbuff, void* recvbuff, size_t count,
                                   sieveDataType_t datatype, sieveLayout_t layout,
                                   sieveComm_t comm, sieveStream_t stream);

/* D2FT. touched: this rank's bitmap over the layout's K segments (bit k of
 * byte k/8, LSB first: this rank computed a gradient for segment k this step;
 * only holders may set it, else every rank fails naming the rank and segment;
 * bits past K are ignored). schedule: NULL = the ranks exchange their bitmaps
 * (an all-gather of ceil(K/8) bytes per rank); else the global table, nranks
 * rows of ceil(K/8) bytes, row r = rank r's bitmap, identical on every rank
 * (then nothing extra is exchanged; hash-checked across ranks only when
 * SIEVE_CHECK_SCHEDULE=1; touched may then be NULL, or must equal this rank's
 * row). For segment k with contributors T_k: T_k empty: no bytes move and
 * recvbuff is not written on any rank; else every holder receives
 * (1/|T_k|) * sum over r in T_k of sendbuff_r, and only contributors send.
 * Plans are cached per bitmap pattern. Datatypes as sieveAllReduceSubnet.
 *
 * Device buffers (both calls): enqueued on stream and staged through pinned host
 * memory, sendbuff whole; only what the call writes is copied back into
 * recvbuff: the segments this rank holds (SDP), those some rank touched (D2FT
 * with a schedule). D2FT with exchanged bitmaps learns what is touched after
 * the copies are enqueued, so every held segment is staged from recvbuff and
 * copied back, an untouched one unchanged: do not write recvbuff from another
 * stream while the call runs. */
sieveResult_t sieveAllReduceD2ft(const void* sendbuff, void* recvbuff, size_t count,
                                 sieveDataType_t datatype, sieveLayout_t layout,
                                 const unsigned char* touched, const unsigned char* schedule,
                                 sieveComm_t comm, sieveStream_t stream);

/* ---- Subnet collectives at L levels (SDP, D2FT composed with quantization) -- */

/* sieveAllReduceSubnet and sieveAllReduceD2ft with every group's ring carrying
 * quantized sums at `levels` = L levels per sign (1 <= L <= SIEVE_MAX_LEVELS; 1 is
 * ternary). A group is the segments with the same contributors T (SDP: holders;
 * D2FT: the ranks that touched them), its elements numbered j = 0, 1, ... in
 * buffer order across its segments. Per block b of params->block_size such
 * positions, s_b = max over T of max |sendbuff| in b; rank r in T sends
 * q_r[j] = sign(g) * (floor(y) + [u < y - floor(y)]), y = (|g| / s_b) * L in float32,
 * u from Philox (seed, r, step, j): sieveAllReduceQuantized's contract on the
 * group's elements (unbiased; exact integer sums, k ranks' partial sums in
 * ceil(log2(2kL + 1)) bits). Every holder's recvbuff = (s_b * Q[j]) / (|T| * L) in
 * float32, rounded once to datatype (non-contributing holders receive those
 * values); a group with one contributor moves nothing and is its input, exact.
 * Untouched segments (and segments a rank does not hold) are not written, as
 * in the dense calls. params->error_feedback = 1 keeps this rank's residual e
 * per buffer (sendbuff, count, datatype, layout; 4 bytes per element until the
 * communicator is destroyed): every element the rank sends in a group of two or
 * more contributors is sent as g + e (scales included) and e becomes
 * g + e - s_b * q / L; elements it does not send (untouched, not held, or in a
 * group it is the only contributor of) keep their residual for a later call.
 * params->mask (registered on comm for count; NULL: none) composes as for
 * sieveAllReduceTernary: a group's elements are only the ones the mask keeps
 * (j and the blocks count those), the dropped ones neither travel nor count
 * toward any scale, and every dropped element of a segment the call writes
 * on this rank becomes 0 (a segment the mask drops whole moves nothing).
 * float32, float16, bfloat16; count below 2^32. Every rank passes the same
 * levels, seed, step, block_size and mask (a mismatch fails on every rank naming
 * the field). Device buffers as for the dense calls (the host
 * kernels quantize the staged copy; error feedback keyed by the device sendbuff). */
sieveResult_t sieveAllReduceSubnetQuantized(const void* sendbuff, void* recvbuff, size_t count,
                                            sieveDataType_t datatype, sieveLayout_t layout,
                                            int levels, const sieveTernaryParams_t* params,
                                            sieveComm_t comm, sieveStream_t stream);
sieveResult_t sieveAllReduceD2ftQuantized(const void* sendbuff, void* recvbuff, size_t count,
                                          sieveDataType_t datatype, sieveLayout_t layout,
                                          const unsigned char* touched,
                                          const unsigned char* schedule, int levels,
                                          const sieveTernaryParams_t* params, sieveComm_t comm,
                                          sieveStream_t stream);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* SIEVE_H_ */
