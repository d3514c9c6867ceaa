// Argument checks of the quantized calls (ternary, L levels, reduce-scatter,
// subnet): the level count and sieveTernaryParams_t. Each returns
// InvalidArgument naming the argument.
#ifndef SIEVE_API_QUANTIZED_ARGS_H_
#define SIEVE_API_QUANTIZED_ARGS_H_

#include <cstddef>

#include "core/status.h"
#include "sieve.h"

namespace sieve {

// 1 <= levels <= SIEVE_MAX_LEVELS.
Status CheckLevels(int levels);
// params non-null; count and params->block_size within the Philox stream's
// 2^34 elements; `name` ("the ternary all-reduce") says whose limit.
Status CheckTernaryParams(const sieveTernaryParams_t* params, size_t count, const char* name);

}  // namespace sieve

#endif  // SIEVE_API_QUANTIZED_ARGS_H_
