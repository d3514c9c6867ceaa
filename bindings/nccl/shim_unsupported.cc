// NCCL entry points Sieve does not provide (NCCL-allocated memory, buffer registration, windows, custom
// operators, simulation): each returns ncclInvalidUsage and says why in
// ncclGetLastError, so a caller learns at once instead of finding a missing symbol or no-op.
#include "shim_internal.h"

using sieve_nccl::Unsupported;

extern "C" {

ncclResult_t ncclMemAlloc(void** ptr, size_t size) {
  return Unsupported(nullptr, "ncclMemAlloc",
                     "allocate with cudaMalloc instead: Sieve detects device buffers per call and "
                     "has no symmetric-memory allocator");
}

ncclResult_t ncclMemFree(void* ptr) {
  return Unsupported(nullptr, "ncclMemFree",
                     "no memory comes from ncclMemAlloc, which Sieve does not provide");
}

ncclResult_t ncclCommRegister(const ncclComm_t comm, void* buff, size_t size, void** handle) {
  return Unsupported(comm, "ncclCommRegister",
                     "buffer registration (zero-copy CUDA buffers) is not implemented");
}

ncclResult_t ncclCommDeregister(const ncclComm_t comm, void* handle) {
  return Unsupported(comm, "ncclCommDeregister",
                     "no handle comes from ncclCommRegister, which Sieve does not provide");
}

ncclResult_t ncclCommWindowRegister(ncclComm_t comm, void* buff, size_t size, ncclWindow_t* win,
                                    int winFlags) {
  return Unsupported(comm, "ncclCommWindowRegister",
                     "symmetric memory windows are not implemented");
}

ncclResult_t ncclCommWindowDeregister(ncclComm_t comm, ncclWindow_t win) {
  return Unsupported(comm, "ncclCommWindowDeregister",
                     "symmetric memory windows are not implemented");
}

ncclResult_t ncclRedOpCreatePreMulSum(ncclRedOp_t* op, void* scalar, ncclDataType_t datatype,
                                      ncclScalarResidence_t residence, ncclComm_t comm) {
  return Unsupported(comm, "ncclRedOpCreatePreMulSum",
                     "custom reduction operators are not implemented; use ncclSum, ncclProd, "
                     "ncclMax, ncclMin or ncclAvg");
}

ncclResult_t ncclRedOpDestroy(ncclRedOp_t op, ncclComm_t comm) {
  return Unsupported(comm, "ncclRedOpDestroy",
                     "no operator comes from ncclRedOpCreatePreMulSum, which Sieve does not "
                     "provide");
}

ncclResult_t ncclGroupSimulateEnd(ncclSimInfo_t* simInfo) {
  return Unsupported(nullptr, "ncclGroupSimulateEnd",
                     "Sieve has no performance model to simulate a group with");
}

}  // extern "C"

SIEVE_NCCL_PROFILING_ALIAS(ncclMemAlloc);
SIEVE_NCCL_PROFILING_ALIAS(ncclMemFree);
SIEVE_NCCL_PROFILING_ALIAS(ncclCommRegister);
SIEVE_NCCL_PROFILING_ALIAS(ncclCommDeregister);
SIEVE_NCCL_PROFILING_ALIAS(ncclCommWindowRegister);
SIEVE_NCCL_PROFILING_ALIAS(ncclCommWindowDeregister);
SIEVE_NCCL_PROFILING_ALIAS(ncclRedOpCreatePreMulSum);
SIEVE_NCCL_PROFILING_ALIAS(ncclRedOpDestroy);
SIEVE_NCCL_PROFILING_ALIAS(ncclGroupSimulateEnd);
