// The coverage division of subnet averaging (SDP, D2FT), fused into the ring's
// last combine: out = (a + b) / divisor in one pass, one rounding. The scalar
// *Reference is the oracle the tests compare against.
#ifndef SIEVE_KERNELS_COVERAGE_AVERAGE_H_
#define SIEVE_KERNELS_COVERAGE_AVERAGE_H_

#include <cstddef>

#include "kernels/dtype.h"

namespace sieve::kernels {

// True for the types subnet averaging supports: float32, float16, bfloat16, float64.
bool SupportsCoverageAverage(DType dtype);

// out[i] = (a[i] + b[i]) / divisor, i < n. float16/bfloat16 add and divide in
// float32 and round once; float32 in float32; float64 in float64 (IEEE division,
// so bit-identical to the reference). out may alias a or b. divisor >= 1.
// REQUIRES: SupportsCoverageAverage(dtype).
void SumDivide(DType dtype, const void* a, const void* b, void* out, size_t n, int divisor);

void SumDivideReference(DType dtype, const void* a, const void* b, void* out, size_t n,
                        int divisor);

}  // namespace sieve::kernels

#endif  // SIEVE_KERNELS_COVERAGE_AVERAGE_H_
