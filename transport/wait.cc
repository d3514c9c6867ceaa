// ProgressUntil: spin on transport progress; yield the CPU once idle for a
// while so oversubscribed ranks (more ranks than cores) still make progress.
#include "transport/wait.h"

#include <sched.h>

#include <chrono>

namespace sieve::transport {

Status ProgressUntil(Transport* transport, const std::function<bool()>& done,
                     const WaitOptions& options) {
  using Clock = std::chrono::steady_clock;
  auto last_progress = Clock::now();
  unsigned idle_spins = 0;
  // Progress means one of our operations completed, not merely transport
  // activity (keepalives must not hide a frozen peer).
  uint64_t completed = transport->completions();
  while (!done()) {
    transport->Progress();
    uint64_t now = transport->completions();
    if (now != completed) {
      completed = now;
      last_progress = Clock::now();
      idle_spins = 0;
      continue;
    }
    if (options.abort != nullptr && options.abort->load(std::memory_order_relaxed))
      return Status::RemoteError("communicator aborted");
    if (++idle_spins % 64 != 0) continue;
    if (options.check_peers) {
      Status failed = options.check_peers();
      if (!failed.ok()) {
        // A peer that finished and exited may have left its last messages
        // (e.g. rendezvous acknowledgements) queued for us: drain before the verdict.
        auto drain_until = Clock::now() + std::chrono::milliseconds(20);
        while (!done() && Clock::now() < drain_until) transport->Progress();
        if (done()) return Status::OK();
        return failed;
      }
    }
    double idle = std::chrono::duration<double>(Clock::now() - last_progress).count();
    if (idle > options.timeout_s) {
      std::string pending = options.describe_pending ? options.describe_pending() : "";
      return Status::RemoteError(StrFormat("no progress for %.1f s (SIEVE_TIMEOUT); waiting on %s",
                                           idle, pending.empty() ? "?" : pending.c_str()));
    }
    if (idle_spins > 128) sched_yield();  // let oversubscribed ranks run
  }
  return Status::OK();
}

}  // namespace sieve::transport
