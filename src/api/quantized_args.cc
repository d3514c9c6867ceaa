// The quantized calls' argument checks (quantized_args.h).
#include "api/quantized_args.h"

#include "kernels/philox.h"
#include "kernels/ternary.h"

namespace sieve {

Status CheckLevels(int levels) {
  if (levels < 1 || levels > kernels::kMaxLevels)
    return Status::InvalidArgument(StrFormat("levels %d is out of range (1..%d; 1 is ternary)",
                                             levels, kernels::kMaxLevels));
  return Status::OK();
}

Status CheckTernaryParams(const sieveTernaryParams_t* params, size_t count, const char* name) {
  if (params == nullptr) return Status::InvalidArgument("params is NULL");
  if (count > kernels::kPhiloxMaxElements)
    return Status::InvalidArgument(
        StrFormat("count %zu exceeds the limit of %s, 2^34 elements", count, name));
  // Bounded like count (one block may cover a whole buffer), so count + block_size - 1
  // cannot wrap and block_size fits the fingerprint (algo::TernaryMode).
  if (params->block_size > kernels::kPhiloxMaxElements)
    return Status::InvalidArgument(StrFormat(
        "params->block_size %zu exceeds the limit of 2^34 elements (0 means 2048)",
        params->block_size));
  return Status::OK();
}

}  // namespace sieve
