// CHECK_OK for the device checks: a call that fails (after polling, on a
// non-blocking communicator) returns what failed and the library's message
// from the enclosing function (which returns std::string and has `comm`).
#ifndef SIEVE_TESTS_GPU_DEVICE_CHECK_OK_H_
#define SIEVE_TESTS_GPU_DEVICE_CHECK_OK_H_

#include <chrono>
#include <cstdio>
#include <string>
#include <thread>

#include "sieve.h"

namespace sieve_test {

// On a non-blocking communicator host-buffer calls (and groups) return
// sieveInProgress: the result is what the poll ends in.
inline sieveResult_t Completed(sieveComm_t comm, sieveResult_t r) {
  while (r == sieveInProgress) {
    if (sieveCommGetAsyncError(comm, &r) != sieveSuccess) return sieveInternalError;
    if (r == sieveInProgress) std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
  return r;
}

}  // namespace sieve_test

#define CHECK_OK(call, ...)                                                      \
  do {                                                                           \
    if (::sieve_test::Completed(comm, (call)) != sieveSuccess) {                 \
      char what_[256];                                                           \
      std::snprintf(what_, sizeof what_, __VA_ARGS__);                           \
      return std::string(what_) + ": " + sieveGetLastError(comm);                \
    }                                                                            \
  } while (0)

#endif  // SIEVE_TESTS_GPU_DEVICE_CHECK_OK_H_
