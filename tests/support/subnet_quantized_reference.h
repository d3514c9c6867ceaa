// The expected result of the subnet all-reduces at L levels
// (sieveAllReduceSubnetQuantized, sieveAllReduceD2ftQuantized), built from the
// two oracles: the subnet layout's groups (subnet_reference.h) and the ternary
// reference over each group's elements among its contributors (ternary_reference.h).
#ifndef SIEVE_TESTS_SUPPORT_SUBNET_QUANTIZED_REFERENCE_H_
#define SIEVE_TESTS_SUPPORT_SUBNET_QUANTIZED_REFERENCE_H_

#include <vector>

#include "support/subnet_reference.h"
#include "support/ternary_reference.h"

namespace sieve_test {

// Rank `rank`'s expected recvbuff. c: nranks, dtype, levels, seed, step, block and
// input_seed (every rank's input is TernaryCaseInput(c, r) of LayoutCount(layout)
// elements; c.count, kept, ranks and op are set here). Segments with the same
// contributors T and the same other holders form a group, its elements numbered
// in buffer order; on a group this rank holds: T of two or more ranks, the
// average of the ternary reference over the group's elements among T; one
// contributor, its input; elsewhere (and where T is empty) the bytes of `before`.
// `mask` (null: none; else one flag per element): a group's elements are only the
// kept ones, and the dropped ones of the groups this rank holds are 0.
void ExpectedSubnetQuantized(const TernaryCase& c, const TestLayout& layout,
                             const Touched* touched, int rank, const void* before,
                             void* expected, const std::vector<bool>* mask = nullptr);

// With error feedback (params->error_feedback = 1): recvbuff after each of `steps` calls
// with the same sendbuff and Philox steps c.step, c.step + 1, ...; each group of two or more
// contributors follows ExpectedTernaryFeedback (its residuals start at 0); a group of one
// is its input every time.
std::vector<std::vector<char>> ExpectedSubnetQuantizedFeedback(
    const TernaryCase& c, const TestLayout& layout, const Touched* touched, int rank,
    const void* before, int steps, const std::vector<bool>* mask = nullptr);

}  // namespace sieve_test

#endif  // SIEVE_TESTS_SUPPORT_SUBNET_QUANTIZED_REFERENCE_H_
