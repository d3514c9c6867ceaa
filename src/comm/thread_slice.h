// The calling thread's time slice under Linux's EEVDF scheduler (6.12+): a
// thread that sleeps on the network and runs briefly when woken asks for a
// short one, so that it preempts a computing thread at once when data arrives
// instead of waiting out that thread's slice. Its share of CPU is unchanged.
#ifndef SIEVE_COMM_THREAD_SLICE_H_
#define SIEVE_COMM_THREAD_SLICE_H_

#include <cstdint>

namespace sieve {

// The slice the background thread asks for (the kernel's lower bound).
constexpr uint64_t kShortSliceNs = 100 * 1000;

// Asks for a slice of slice_ns for the calling thread (and the threads it
// creates afterwards). False when the kernel refuses it or the thread runs
// under another policy than SCHED_OTHER (left as the application set it);
// kernels before 6.12 accept the request and ignore it.
bool RequestThreadSlice(uint64_t slice_ns);

// The calling thread's slice as the kernel reports it; 0 when it does not.
uint64_t ThreadSliceNs();

// Moves the calling thread to SCHED_RR at its lowest priority: it then preempts every
// SCHED_OTHER thread when woken (the kernel's real-time throttling still leaves them a
// share). False when not permitted (no CAP_SYS_NICE or RLIMIT_RTPRIO); the thread keeps
// its policy then.
bool RequestRealtime();

// Whether the calling thread runs under SCHED_RR.
bool ThreadIsRealtime();

}  // namespace sieve

#endif  // SIEVE_COMM_THREAD_SLICE_H_
