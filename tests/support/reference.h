// Test inputs and expected results for the dense collectives, computable on
// any one process from (seed, rank, element): every rank can check its own
// output against what all ranks sent, without talking to them.
#ifndef SIEVE_TESTS_SUPPORT_REFERENCE_H_
#define SIEVE_TESTS_SUPPORT_REFERENCE_H_

#include <cstdint>
#include <vector>

#include "sieve.h"

namespace sieve_test {

// Every datatype and reduction op of the API.
inline constexpr sieveDataType_t kAllTypes[] = {
    sieveInt8,   sieveUint8,   sieveInt32,   sieveUint32,  sieveInt64,
    sieveUint64, sieveFloat16, sieveFloat32, sieveFloat64, sieveBfloat16};
inline constexpr sieveRedOp_t kAllOps[] = {sieveSum, sieveProd, sieveMax, sieveMin, sieveAvg};

size_t TypeSize(sieveDataType_t dtype);
const char* TypeName(sieveDataType_t dtype);
const char* OpName(sieveRedOp_t op);

// Fills `count` elements of rank `rank`'s input for a case. Integer types get
// full-range random bits (sums and products wrap exactly); floating types get
// small integers (so every sum, product and average is exact in every type,
// and results can be compared bit for bit whatever the summation order); for
// prod the floats are in {-2,-1,1,2}. Never all zeros.
void FillInput(uint64_t seed, int rank, sieveDataType_t dtype, sieveRedOp_t op, size_t offset,
               size_t count, void* out);

// expected[i] = op over ranks r of FillInput(seed, r, ...)[offset + i], with
// the division of avg applied once at the end (integer avg truncates).
void ExpectedReduction(uint64_t seed, int nranks, sieveDataType_t dtype, sieveRedOp_t op,
                       size_t offset, size_t count, void* expected);

// Number of elements that differ bytewise; writes the first mismatch index.
size_t CountMismatches(const void* got, const void* expected, size_t count, size_t elem_size,
                       size_t* first);

}  // namespace sieve_test

#endif  // SIEVE_TESTS_SUPPORT_REFERENCE_H_
