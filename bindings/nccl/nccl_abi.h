/* nccl_abi.h: Sieve's own declaration of the NCCL 2.28 C ABI (types, enum values, struct
 * layouts, macros and every entry point of nccl.h), so the shim builds without CUDA or NCCL.
 * abi_check.cc asserts it matches the real nccl.h wherever one is installed. */
#ifndef SIEVE_BINDINGS_NCCL_NCCL_ABI_H_
#define SIEVE_BINDINGS_NCCL_NCCL_ABI_H_

#include <limits.h>
#include <stddef.h>

/* The NCCL release whose ABI this is; ncclGetVersion reports it. */
#define NCCL_MAJOR 2
#define NCCL_MINOR 28
#define NCCL_PATCH 9
#define NCCL_SUFFIX ""
#define NCCL_VERSION_CODE 22809
/* Versions up to 2.8 used X*1000 + Y*100 + Z; later ones X*10000 + Y*100 + Z. */
#define NCCL_VERSION(X, Y, Z) \
  (((X) <= 2 && (Y) <= 8) ? (X)*1000 + (Y)*100 + (Z) : (X)*10000 + (Y)*100 + (Z))

#ifdef __cplusplus
extern "C" {
#endif

/* cudaStream_t is this pointer type; the shim never needs the CUDA headers. */
struct CUstream_st;

typedef struct ncclComm* ncclComm_t;
typedef struct ncclWindow_vidmem* ncclWindow_t;
#define NCCL_COMM_NULL NULL

#define NCCL_UNIQUE_ID_BYTES 128
typedef struct {
  char internal[NCCL_UNIQUE_ID_BYTES];
} ncclUniqueId;

typedef enum {
  ncclSuccess = 0,
  ncclUnhandledCudaError = 1,
  ncclSystemError = 2,
  ncclInternalError = 3,
  ncclInvalidArgument = 4,
  ncclInvalidUsage = 5,
  ncclRemoteError = 6,
  ncclInProgress = 7,
  ncclNumResults = 8
} ncclResult_t;

#define NCCL_CONFIG_UNDEF_INT INT_MIN
#define NCCL_CONFIG_UNDEF_PTR NULL
#define NCCL_SPLIT_NOCOLOR -1
#define NCCL_UNDEF_FLOAT -1.0f

#define NCCL_WIN_DEFAULT 0x00
#define NCCL_WIN_COLL_SYMMETRIC 0x01
#define NCCL_WIN_REQUIRED_ALIGNMENT 4096

#define NCCL_CTA_POLICY_DEFAULT 0x00
#define NCCL_CTA_POLICY_EFFICIENCY 0x01
#define NCCL_CTA_POLICY_ZERO 0x02

#define NCCL_SHRINK_DEFAULT 0x00
#define NCCL_SHRINK_ABORT 0x01

#define NCCL_REVOKE_DEFAULT 0x00

/* Communicator configuration, version 2.28 layout (size/magic/version header first). */
typedef struct ncclConfig_v22800 {
  size_t size;
  unsigned int magic;
  unsigned int version;
  int blocking;
  int cgaClusterSize;
  int minCTAs;
  int maxCTAs;
  const char* netName;
  int splitShare;
  int trafficClass;
  const char* commName;
  int collnetEnable;
  int CTAPolicy;
  int shrinkShare;
  int nvlsCTAs;
  int nChannelsPerNetPeer;
  int nvlinkCentricSched;
} ncclConfig_t;

#define SIEVE_NCCL_CONFIG_MAGIC 0xcafebeef
#define NCCL_CONFIG_INITIALIZER                                                                    \
  {                                                                                                \
    sizeof(ncclConfig_t), SIEVE_NCCL_CONFIG_MAGIC,                                                 \
        NCCL_VERSION(NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH), NCCL_CONFIG_UNDEF_INT,                   \
        NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT,                       \
        NCCL_CONFIG_UNDEF_PTR, NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT,                       \
        NCCL_CONFIG_UNDEF_PTR, NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT,                       \
        NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT \
  }

/* What ncclGroupSimulateEnd reports. */
typedef struct ncclSimInfo_v22200 {
  size_t size;
  unsigned int magic;
  unsigned int version;
  float estimatedTime;
} ncclSimInfo_t;

#define SIEVE_NCCL_SIM_INFO_MAGIC 0x74685283
#define NCCL_SIM_INFO_INITIALIZER                                          \
  {                                                                        \
    sizeof(ncclSimInfo_t), SIEVE_NCCL_SIM_INFO_MAGIC,                      \
        NCCL_VERSION(NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH), NCCL_UNDEF_FLOAT \
  }

/* Reduction operators. Values from ncclNumOps up to ncclMaxRedOp name operators made by
 * ncclRedOpCreate*; ncclMaxRedOp is the largest int that keeps the enum int-sized. */
typedef enum { ncclNumOps_dummy = 5 } ncclRedOp_dummy_t;
typedef enum {
  ncclSum = 0,
  ncclProd = 1,
  ncclMax = 2,
  ncclMin = 3,
  ncclAvg = 4,
  ncclNumOps = 5,
  ncclMaxRedOp = 0x7fffffff
} ncclRedOp_t;

typedef enum {
  ncclInt8 = 0,
  ncclChar = 0,
  ncclUint8 = 1,
  ncclInt32 = 2,
  ncclInt = 2,
  ncclUint32 = 3,
  ncclInt64 = 4,
  ncclUint64 = 5,
  ncclFloat16 = 6,
  ncclHalf = 6,
  ncclFloat32 = 7,
  ncclFloat = 7,
  ncclFloat64 = 8,
  ncclDouble = 8,
  ncclBfloat16 = 9,
  ncclFloat8e4m3 = 10,
  ncclFloat8e5m2 = 11,
  ncclNumTypes = 12
} ncclDataType_t;

/* Where the scalar of ncclRedOpCreatePreMulSum lives. */
typedef enum { ncclScalarDevice = 0, ncclScalarHostImmediate = 1 } ncclScalarResidence_t;

/* Every entry point as X(return type, name, parameter list). Each name also exists with a
 * 'p' prefix (the profiling interface) and the same signature. */
#define SIEVE_NCCL_ABI_FUNCTIONS(X)                                                                \
  X(ncclResult_t, ncclMemAlloc, (void** ptr, size_t size))                                         \
  X(ncclResult_t, ncclMemFree, (void* ptr))                                                        \
  X(ncclResult_t, ncclGetVersion, (int* version))                                                  \
  X(ncclResult_t, ncclGetUniqueId, (ncclUniqueId * uniqueId))                                      \
  X(ncclResult_t, ncclCommInitRankConfig,                                                          \
    (ncclComm_t * comm, int nranks, ncclUniqueId commId, int rank, ncclConfig_t* config))          \
  X(ncclResult_t, ncclCommInitRank,                                                                \
    (ncclComm_t * comm, int nranks, ncclUniqueId commId, int rank))                                \
  X(ncclResult_t, ncclCommInitAll, (ncclComm_t * comm, int ndev, const int* devlist))              \
  X(ncclResult_t, ncclCommFinalize, (ncclComm_t comm))                                             \
  X(ncclResult_t, ncclCommDestroy, (ncclComm_t comm))                                              \
  X(ncclResult_t, ncclCommAbort, (ncclComm_t comm))                                                \
  X(ncclResult_t, ncclCommRevoke, (ncclComm_t comm, int revokeFlags))                              \
  X(ncclResult_t, ncclCommSplit,                                                                   \
    (ncclComm_t comm, int color, int key, ncclComm_t* newcomm, ncclConfig_t* config))              \
  X(ncclResult_t, ncclCommShrink,                                                                  \
    (ncclComm_t comm, int* excludeRanksList, int excludeRanksCount, ncclComm_t* newcomm,           \
     ncclConfig_t* config, int shrinkFlags))                                                       \
  X(ncclResult_t, ncclCommInitRankScalable,                                                        \
    (ncclComm_t * newcomm, int nranks, int myrank, int nId, ncclUniqueId* commIds,                 \
     ncclConfig_t* config))                                                                        \
  X(const char*, ncclGetErrorString, (ncclResult_t result))                                        \
  X(const char*, ncclGetLastError, (ncclComm_t comm))                                              \
  X(void, ncclResetDebugInit, (void))                                                              \
  X(ncclResult_t, ncclCommGetAsyncError, (ncclComm_t comm, ncclResult_t * asyncError))             \
  X(ncclResult_t, ncclCommCount, (const ncclComm_t comm, int* count))                              \
  X(ncclResult_t, ncclCommCuDevice, (const ncclComm_t comm, int* device))                          \
  X(ncclResult_t, ncclCommUserRank, (const ncclComm_t comm, int* rank))                            \
  X(ncclResult_t, ncclCommRegister,                                                                \
    (const ncclComm_t comm, void* buff, size_t size, void** handle))                               \
  X(ncclResult_t, ncclCommDeregister, (const ncclComm_t comm, void* handle))                       \
  X(ncclResult_t, ncclCommWindowRegister,                                                          \
    (ncclComm_t comm, void* buff, size_t size, ncclWindow_t* win, int winFlags))                   \
  X(ncclResult_t, ncclCommWindowDeregister, (ncclComm_t comm, ncclWindow_t win))                   \
  X(ncclResult_t, ncclRedOpCreatePreMulSum,                                                        \
    (ncclRedOp_t * op, void* scalar, ncclDataType_t datatype, ncclScalarResidence_t residence,     \
     ncclComm_t comm))                                                                             \
  X(ncclResult_t, ncclRedOpDestroy, (ncclRedOp_t op, ncclComm_t comm))                             \
  X(ncclResult_t, ncclReduce,                                                                      \
    (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, ncclRedOp_t op,  \
     int root, ncclComm_t comm, struct CUstream_st* stream))                                       \
  X(ncclResult_t, ncclBcast,                                                                       \
    (void* buff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm,                 \
     struct CUstream_st* stream))                                                                  \
  X(ncclResult_t, ncclBroadcast,                                                                   \
    (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root,        \
     ncclComm_t comm, struct CUstream_st* stream))                                                 \
  X(ncclResult_t, ncclAllReduce,                                                                   \
    (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, ncclRedOp_t op,  \
     ncclComm_t comm, struct CUstream_st* stream))                                                 \
  X(ncclResult_t, ncclReduceScatter,                                                               \
    (const void* sendbuff, void* recvbuff, size_t recvcount, ncclDataType_t datatype,              \
     ncclRedOp_t op, ncclComm_t comm, struct CUstream_st* stream))                                 \
  X(ncclResult_t, ncclAllGather,                                                                   \
    (const void* sendbuff, void* recvbuff, size_t sendcount, ncclDataType_t datatype,              \
     ncclComm_t comm, struct CUstream_st* stream))                                                 \
  X(ncclResult_t, ncclAlltoAll,                                                                    \
    (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, ncclComm_t comm, \
     struct CUstream_st* stream))                                                                  \
  X(ncclResult_t, ncclGather,                                                                      \
    (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root,        \
     ncclComm_t comm, struct CUstream_st* stream))                                                 \
  X(ncclResult_t, ncclScatter,                                                                     \
    (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root,        \
     ncclComm_t comm, struct CUstream_st* stream))                                                 \
  X(ncclResult_t, ncclSend,                                                                        \
    (const void* sendbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,       \
     struct CUstream_st* stream))                                                                  \
  X(ncclResult_t, ncclRecv,                                                                        \
    (void* recvbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,             \
     struct CUstream_st* stream))                                                                  \
  X(ncclResult_t, ncclGroupStart, (void))                                                          \
  X(ncclResult_t, ncclGroupEnd, (void))                                                            \
  X(ncclResult_t, ncclGroupSimulateEnd, (ncclSimInfo_t * simInfo))

/* abi_check.cc defines SIEVE_NCCL_ABI_TYPES_ONLY to compare the list with the real header. */
#ifndef SIEVE_NCCL_ABI_TYPES_ONLY
#define SIEVE_NCCL_ABI_DECLARE(ret, name, params) \
  ret name params;                                \
  ret p##name params;
SIEVE_NCCL_ABI_FUNCTIONS(SIEVE_NCCL_ABI_DECLARE)
#undef SIEVE_NCCL_ABI_DECLARE
#endif

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* SIEVE_BINDINGS_NCCL_NCCL_ABI_H_ */
