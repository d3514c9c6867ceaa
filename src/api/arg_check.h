// Argument checks shared by the entry points: each returns InvalidArgument
// with a message naming the argument and what was wrong.
#ifndef SIEVE_API_ARG_CHECK_H_
#define SIEVE_API_ARG_CHECK_H_

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "api/api_guard.h"
#include "kernels/dtype.h"

namespace sieve {

// A live communicator that has not failed; writes its implementation.
Status CheckComm(sieveComm_t comm, Comm** out);
// C enums arrive from callers as ints that may hold any value; reading them
// through memcpy avoids an (undefined) load of an out-of-range enum.
template <typename E>
int EnumValue(const E& e) {
  static_assert(sizeof(E) == sizeof(int), "C enums are int-sized");
  int v;
  std::memcpy(&v, &e, sizeof v);
  return v;
}
Status CheckDataType(int datatype, kernels::DType* out);
Status CheckRedOp(int op, kernels::RedOp* out);
// Non-null when count > 0.
Status CheckBuffer(const void* buffer, const char* name, size_t count);
// count * blocks elements of elem_size bytes must fit in size_t.
Status CheckByteSize(size_t count, size_t blocks, size_t elem_size, const char* name);
Status CheckRank(int rank, int nranks, const char* name);
// sendbuff (send_bytes) and recvbuff (recv_bytes) of one call must not overlap,
// except when sendbuff is exactly `in_place` (the call's in-place position,
// described by `in_place_text`, e.g. "sendbuff == recvbuff"). Empty or NULL
// buffers are not checked.
Status CheckOverlap(const void* send, size_t send_bytes, const void* recv, size_t recv_bytes,
                    uintptr_t in_place, const char* in_place_text);

// The types and ops of the compressed all-reduces: float32/float16/bfloat16,
// sum or avg; `name` ("the ternary all-reduce") says whose in the message.
Status CheckFloatSumAvg(kernels::DType dtype, kernels::RedOp op, const char* name);

}  // namespace sieve

#endif  // SIEVE_API_ARG_CHECK_H_
