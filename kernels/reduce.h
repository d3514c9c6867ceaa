// Elementwise reductions on host memory: the dense all-reduce's arithmetic.
// Plain loops the compiler vectorizes; float16/bfloat16 compute in float32 and
// round once per call. The *Reference versions are the obviously-right scalar
// oracles the tests compare against.
#ifndef SIEVE_KERNELS_REDUCE_H_
#define SIEVE_KERNELS_REDUCE_H_

#include <cstddef>

#include "kernels/dtype.h"

namespace sieve::kernels {

// out[i] = a[i] op b[i], i < n. kAvg combines as kSum (see DivideBy). out may
// alias a or b. a and out are aligned for dtype; b may sit at any address (a
// fragment in a transport's receive buffer: algo::ReduceSink). Integer
// sum/prod wrap modulo 2^bits (as NCCL); max/min of floats follow
// fmax/fmin-like IEEE comparisons (NaN handling unspecified).
void Reduce(DType dtype, RedOp op, const void* a, const void* b, void* out, size_t n);

// buf[i] = buf[i] / divisor: integers truncate toward zero (as NCCL's avg),
// floats divide once in float32 (float16/bfloat16/float32) or float64.
void DivideBy(DType dtype, void* buf, size_t n, int divisor);

void ReduceReference(DType dtype, RedOp op, const void* a, const void* b, void* out, size_t n);
void DivideByReference(DType dtype, void* buf, size_t n, int divisor);

}  // namespace sieve::kernels

#endif  // SIEVE_KERNELS_REDUCE_H_
