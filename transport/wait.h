// The one blocking loop: progress the transport until a condition holds, with a
// timeout that measures lack of progress (not total duration), an abort flag,
// and peer-failure checks.
#ifndef SIEVE_TRANSPORT_WAIT_H_
#define SIEVE_TRANSPORT_WAIT_H_

#include <atomic>
#include <functional>
#include <string>

#include "transport/transport.h"

namespace sieve::transport {

struct WaitOptions {
  double timeout_s = 60;                       // fail after this long without progress
  // Idle waiting: spin this long after the last completion, then sleep on the
  // transport's events at most sleep_s at a time (SIEVE_WAIT_SPIN_US, SIEVE_WAIT_SLEEP_US).
  double spin_s = 50e-6;
  double sleep_s = 1e-3;
  const std::atomic<bool>* abort = nullptr;    // set by sieveCommAbort from any thread
  // Checked when progress stalls or fails: returns a non-OK status naming the
  // peer(s) that failed, or OK when none did.
  std::function<Status()> check_peers;
  // Names what is still pending, for the timeout message ("rank 3 (recv)").
  std::function<std::string()> describe_pending;
};

// Returns OK once done() is true. `done` is evaluated after each progress call.
Status ProgressUntil(Transport* transport, const std::function<bool()>& done,
                     const WaitOptions& options);

}  // namespace sieve::transport

#endif  // SIEVE_TRANSPORT_WAIT_H_
