// What the elastic-membership tests check on a shrunk or grown communicator: one exact
// collective of every mode (dense, masked, ternary, subnet) against the references, and that a
// mask registered on the parent is refused on it as stale.
#ifndef SIEVE_TESTS_SUPPORT_ELASTIC_CHECKS_H_
#define SIEVE_TESTS_SUPPORT_ELASTIC_CHECKS_H_

#include <cstdint>
#include <string>

#include "sieve.h"

namespace sieve_test {

// Runs a dense float32 and int32 sum all-reduce, a masked all-reduce (mask registered on comm),
// a ternary all-reduce and an SDP subnet all-reduce (layout registered on comm) among the
// `nranks` ranks of comm, each against its reference. Returns "" when every element of every
// result is exact, else what went wrong (first failure). two_per_host: comm's ranks are on
// hosts of 2 (SIEVE_HOST_ID), so the all-reduce is hierarchical and ternary quantizes host sums.
std::string CheckAllModes(sieveComm_t comm, int rank, int nranks, uint64_t seed,
                          bool two_per_host = false);

// Registers a strict mask of `count` elements on comm (collective); NULL on failure.
sieveMask_t RegisterTestMask(sieveComm_t comm, size_t count);

// A mask registered on another communicator, used on comm: must be sieveInvalidArgument whose
// message says it was registered on the communicator comm was shrunk or grown from. Local (the
// call fails before any communication). Returns "" when so.
std::string CheckStaleMask(sieveComm_t comm, sieveMask_t stale, size_t count);

}  // namespace sieve_test

#endif  // SIEVE_TESTS_SUPPORT_ELASTIC_CHECKS_H_
