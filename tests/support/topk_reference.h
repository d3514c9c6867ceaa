// The top-k all-reduce's reference (sieveAllReduceTopK), written independently of
// src/topk/: a full stable sort per rank, not a selection. Shared by the loopback
// sweep and the API sequence fuzzer.
#ifndef SIEVE_TESTS_SUPPORT_TOPK_REFERENCE_H_
#define SIEVE_TESTS_SUPPORT_TOPK_REFERENCE_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "sieve.h"

namespace sieve_test {

// Bytes of one element of t (float32, float16 or bfloat16).
size_t TopKElemSize(sieveDataType_t t);
// The element at p, widened to float.
float TopKLoad(sieveDataType_t t, const uint8_t* p);
// Rounds v to t and writes it at p; returns the rounded value.
float TopKStore(sieveDataType_t t, float v, uint8_t* p);
// k = ceil(fraction * count), at least 1 when count > 0.
size_t TopKKept(size_t count, double fraction);

// What every rank must get (count elements of t, then one spare byte) from every rank's
// input (count elements each); with error feedback, residuals holds each rank's residual
// (n vectors of count floats), updated as the call updates it; empty: no feedback.
std::vector<uint8_t> ExpectedTopK(const std::vector<std::vector<uint8_t>>& inputs,
                                  sieveDataType_t t, sieveRedOp_t op, size_t count,
                                  double fraction, std::vector<std::vector<float>>* residuals);

}  // namespace sieve_test

#endif  // SIEVE_TESTS_SUPPORT_TOPK_REFERENCE_H_
