// Error-feedback residuals of the ternary all-reduce quantized on the host (the
// caller's host buffers, or a device call's staging): one float per quantized
// element, per buffer, kept with the communicator (ternary/device_residuals.h
// holds the device-memory ones).
#ifndef SIEVE_TERNARY_RESIDUALS_H_
#define SIEVE_TERNARY_RESIDUALS_H_

#include <cstddef>

#include "comm/comm.h"

namespace sieve::ternary {

// The residual of the buffer (send, count, dtype, mask handle) with `elems`
// floats (count, or the mask's kept elements): zeros when new or when elems
// changed. Valid for the communicator's life. Thread-safe.
float* HostResidualFor(Comm& comm, const void* send, size_t count, int dtype, const void* mask,
                       size_t elems);

}  // namespace sieve::ternary

#endif  // SIEVE_TERNARY_RESIDUALS_H_
