// The C boundary: the handle behind sieveComm_t, and Guard(), which runs an
// entry point's body, catches every exception (none may cross the C ABI into a
// foreign process), logs a failure once at WARN and records it as last error.
#ifndef SIEVE_API_API_GUARD_H_
#define SIEVE_API_API_GUARD_H_

#include <cstdint>
#include <functional>
#include <memory>

#include "comm/comm.h"
#include "core/status.h"
#include "sieve.h"

constexpr uint64_t kSieveCommMagic = 0x5349455645434f4dull;  // "SIEVECOM"

struct sieveComm {
  uint64_t magic = kSieveCommMagic;
  std::unique_ptr<sieve::Comm> impl;
};

namespace sieve {

// Runs body; maps its Status (or an exception) to sieveResult_t. `comm` may be
// null (calls without a communicator); when set, its last/async error is kept.
sieveResult_t Guard(Comm* comm, const char* call, const std::function<Status()>& body);

// The calling thread's last error message.
const char* ThreadLastError();

}  // namespace sieve

#endif  // SIEVE_API_API_GUARD_H_
