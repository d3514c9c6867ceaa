// ProgressUntil: spin on transport progress for a short while after the last
// completion (low latency while messages stream in), then sleep on the
// transport's events in bounded slices so an idle rank leaves the CPU to
// kernels and to other ranks on the host, while the abort flag, peer checks
// and the no-progress timeout are still seen after every slice.
#include "transport/wait.h"

#include <sched.h>

#include <algorithm>
#include <chrono>

namespace sieve::transport {

namespace {

using Clock = std::chrono::steady_clock;

// Peer checks read /proc and scan channels: at most this often.
constexpr auto kCheckInterval = std::chrono::milliseconds(1);
// While spinning, the clock and the checks are looked at every this many progress calls.
constexpr unsigned kSpinsPerCheck = 64;

}  // namespace

Status ProgressUntil(Transport* transport, const std::function<bool()>& done,
                     const WaitOptions& options) {
  auto last_progress = Clock::now();
  auto next_check = last_progress;
  const auto spin = std::chrono::duration_cast<Clock::duration>(
      std::chrono::duration<double>(std::max(0.0, options.spin_s)));
  unsigned idle_spins = 0;
  bool sleeping = false;  // past the spin phase since the last completion
  // Progress means one of our operations completed, not merely transport
  // activity (keepalives must not hide a frozen peer).
  uint64_t completed = transport->completions();
  while (!done()) {
    transport->Progress();
    uint64_t now_completed = transport->completions();
    if (now_completed != completed) {
      completed = now_completed;
      last_progress = Clock::now();
      idle_spins = 0;
      sleeping = false;
      continue;
    }
    if (options.abort != nullptr && options.abort->load(std::memory_order_relaxed))
      return Status::RemoteError("communicator aborted");
    if (!sleeping && ++idle_spins % kSpinsPerCheck != 0) continue;
    auto now = Clock::now();
    if (now >= next_check) {
      next_check = now + kCheckInterval;
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
      double idle = std::chrono::duration<double>(now - last_progress).count();
      if (idle > options.timeout_s) {
        std::string pending = options.describe_pending ? options.describe_pending() : "";
        return Status::RemoteError(StrFormat("no progress for %.1f s (SIEVE_TIMEOUT); waiting on %s",
                                             idle, pending.empty() ? "?" : pending.c_str()));
      }
    }
    if (now - last_progress >= spin) {
      sleeping = true;
      // Never sleep past the next check (nor the timeout it enforces).
      double until_check = std::chrono::duration<double>(next_check - now).count();
      transport->WaitForEvents(std::max(1e-6, std::min(options.sleep_s, until_check)));
    } else if (idle_spins > 2 * kSpinsPerCheck) {
      sched_yield();  // still spinning: let oversubscribed ranks (more than cores) run
    }
  }
  return Status::OK();
}

}  // namespace sieve::transport
