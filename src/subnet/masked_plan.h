// A subnet plan under a mask (the quantized subnet calls with params->mask):
// every group's ranges cut to the mask's kept elements, so its ring numbers
// (Philox index, scale block) only those; groups left without elements are
// dropped, alike on every rank (the mask is agreed). And the zero-fill of the
// dropped elements of what this rank writes.
#ifndef SIEVE_SUBNET_MASKED_PLAN_H_
#define SIEVE_SUBNET_MASKED_PLAN_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "subnet/subnet_plan.h"

namespace sieve::subnet {

// `plan` with each group's ranges intersected with the kept runs of `bits`
// (the mask's bitmap: bit j % 64 of word j / 64 keeps element j).
Plan MaskPlan(const Plan& plan, const std::vector<uint64_t>& bits);

// Zeroes, in `recv` (elements of elem_size bytes), every element the mask drops
// within the ranges of the groups `rank` sends or receives in.
void ZeroDropped(const Plan& plan, const std::vector<uint64_t>& bits, int rank, size_t elem_size,
                 void* recv);

}  // namespace sieve::subnet

#endif  // SIEVE_SUBNET_MASKED_PLAN_H_
