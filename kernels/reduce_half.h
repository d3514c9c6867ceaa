// Reduce of float16/bfloat16 with AVX-512 and AVX2 (F16C) kept in registers: both
// inputs widened to float32, combined, rounded once on the store (DESIGN: computed in
// float32, rounded once), sixteen or eight lanes at a time. Internal to reduce.cc.
#ifndef SIEVE_KERNELS_REDUCE_HALF_H_
#define SIEVE_KERNELS_REDUCE_HALF_H_

#include <cstddef>

#include "kernels/dtype.h"

namespace sieve::kernels::simd {

// out = a op b for n float16 or bfloat16 elements (out may be a or b), as ReduceReference
// computes it bit for bit (a NaN's payload included). Callers check ActiveCpuIsa() first.
void ReduceHalfAvx512(DType dtype, RedOp op, const void* a, const void* b, void* out, size_t n);
void ReduceHalfAvx2(DType dtype, RedOp op, const void* a, const void* b, void* out, size_t n);

}  // namespace sieve::kernels::simd

#endif  // SIEVE_KERNELS_REDUCE_HALF_H_
