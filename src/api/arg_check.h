// Argument checks shared by the entry points: each returns InvalidArgument
// with a message naming the argument and what was wrong.
#ifndef SIEVE_API_ARG_CHECK_H_
#define SIEVE_API_ARG_CHECK_H_

#include <cstddef>

#include "api/api_guard.h"
#include "kernels/dtype.h"

namespace sieve {

// A live communicator that has not failed; writes its implementation.
Status CheckComm(sieveComm_t comm, Comm** out);
Status CheckDataType(sieveDataType_t datatype, kernels::DType* out);
Status CheckRedOp(sieveRedOp_t op, kernels::RedOp* out);
// Non-null when count > 0.
Status CheckBuffer(const void* buffer, const char* name, size_t count);
// count * blocks elements of elem_size bytes must fit in size_t.
Status CheckByteSize(size_t count, size_t blocks, size_t elem_size, const char* name);
Status CheckRank(int rank, int nranks, const char* name);

}  // namespace sieve

#endif  // SIEVE_API_ARG_CHECK_H_
