// A kernel that keeps a stream busy for a while (GPU tests of stream semantics).
#ifndef SIEVE_TESTS_GPU_SPIN_KERNEL_H_
#define SIEVE_TESTS_GPU_SPIN_KERNEL_H_

struct CUstream_st;

namespace sieve_test {
// Enqueues one thread that spins for about `ns` nanoseconds on `stream`.
int LaunchSpin(CUstream_st* stream, unsigned long long ns);
}  // namespace sieve_test

#endif  // SIEVE_TESTS_GPU_SPIN_KERNEL_H_
