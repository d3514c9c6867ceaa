// Subnet layouts for the SDP/D2FT tests: seeded random layouts (the same on
// every rank for the same seed), touched tables, and the formulas of DESIGN.md
// 1.4/1.5 computed directly on one process from every rank's FillInput.
#ifndef SIEVE_TESTS_SUPPORT_SUBNET_REFERENCE_H_
#define SIEVE_TESTS_SUPPORT_SUBNET_REFERENCE_H_

#include <cstdint>
#include <random>
#include <vector>

#include "sieve.h"

namespace sieve_test {

struct TestSegment {
  size_t offset = 0;
  size_t length = 0;
  std::vector<int> holders;  // ascending
};
using TestLayout = std::vector<TestSegment>;

// nsegments segments of 1..max_length elements; holder sets drawn so that
// single-holder and all-holder segments are frequent, others random subsets.
TestLayout RandomLayout(std::mt19937_64& rng, int nranks, int nsegments, size_t max_length);
size_t LayoutCount(const TestLayout& layout);
// As sieveSegment_t (pointing into `layout`).
std::vector<sieveSegment_t> ToApi(const TestLayout& layout);

// touched[r][k]: rank r contributes to segment k (only holders ever do).
using Touched = std::vector<std::vector<uint8_t>>;
// Each holder touches each segment with probability p.
Touched RandomTouched(std::mt19937_64& rng, const TestLayout& layout, int nranks, double p);
// Every holder touches every segment (all = true), or nobody touches anything.
Touched UniformTouched(const TestLayout& layout, int nranks, bool all);
// Rank r's bitmap (bit k of byte k/8) and the whole table (nranks rows).
std::vector<unsigned char> BitmapRow(const Touched& touched, int rank);
std::vector<unsigned char> ScheduleTable(const Touched& touched);

// Contributors of segment k: its holders (touched == nullptr, SDP) or the
// ranks that touched it (D2FT).
std::vector<int> Contributors(const TestLayout& layout, const Touched* touched, size_t k);

// Rank `rank`'s expected recvbuff after the call, given what it held before
// (`before`): on segments it holds with contributors T non-empty,
// (1/|T|) * sum over T of FillInput(seed, r, dtype, sieveSum) (the sum exact,
// one division in float32 for float32/float16/bfloat16, float64 for float64,
// rounded once to the type); elsewhere the bytes of `before`.
void ExpectedSubnet(uint64_t seed, int nranks, int rank, sieveDataType_t dtype,
                    const TestLayout& layout, const Touched* touched, const void* before,
                    void* expected);

}  // namespace sieve_test

#endif  // SIEVE_TESTS_SUPPORT_SUBNET_REFERENCE_H_
