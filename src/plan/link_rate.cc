// The single link-rate learner of plan/link_rate.h.
#include "plan/link_rate.h"

#include <algorithm>
#include <cmath>

#include "plan/link_model.h"

namespace sieve::plan {

double LeastSeconds(algo::OpAlgo algo, int n, double sent, double rate_Bps, double one_way_s,
                    size_t segment_bytes) {
  const double a = one_way_s, r = rate_Bps;
  switch (algo) {
    case algo::OpAlgo::kRing: {
      const int steps = 2 * (n - 1);
      const double chunk_s = sent / steps / r;
      const double seg_s = std::min(static_cast<double>(segment_bytes) / r, chunk_s);
      return (steps - 1) * std::max(chunk_s, a + seg_s) + chunk_s + a;
    }
    case algo::OpAlgo::kTree:
      return 2.0 * TreeDepth(n) * a + sent / r;
    case algo::OpAlgo::kOneShot:
    case algo::OpAlgo::kOneShotValues:
      return a + sent / r;
    default:  // the direct exchange
      return std::max(a + sent / r, 2.0 * a + sent * n / (2.0 * (n - 1)) / r);
  }
}

double RateBoundOf(const RateSample& s) {
  const int n = s.nranks;
  if (!s.one_kind_of_link || s.sent < kMinRateSampleBytes || n < 2 || !(s.seconds > 0)) return 0;
  const double sent = static_cast<double>(s.sent);
  // Decreasing in the rate: the r with time_at(r) == s.seconds, by bisection.
  auto time_at = [&](double r) {
    return (s.scales_first ? s.one_way_s : 0.0) +
           LeastSeconds(s.algo, n, sent, r, s.one_way_s, s.segment_bytes);
  };
  if (time_at(kMaxLearnedRateBps) >= s.seconds) return 0;
  double lo = 1e3, hi = kMaxLearnedRateBps;  // time_at(lo) > seconds >= time_at(hi)
  if (time_at(lo) <= s.seconds) return 0;    // slower than 1 kB/s: nothing worth keeping
  for (int i = 0; i < 60; ++i) {
    const double mid = std::sqrt(lo * hi);
    (time_at(mid) > s.seconds ? lo : hi) = mid;
  }
  return lo;
}

double AgreedBound(const std::vector<float>& proposals) {
  if (proposals.empty()) return 0;
  double smallest = INFINITY;
  for (float p : proposals) {
    if (!(p > 0) || !std::isfinite(p)) return 0;
    smallest = std::min(smallest, static_cast<double>(p));
  }
  return smallest;
}

double LinkRate::rate() const {
  std::lock_guard<std::mutex> lock(mu_);
  return *std::max_element(window_, window_ + kWindow);
}

void LinkRate::Offer(double bound) {
  std::lock_guard<std::mutex> lock(mu_);
  if (injected_ || !(bound > 0) || !std::isfinite(bound)) return;
  proposal_ = std::max(proposal_, bound);
}

double LinkRate::proposal() const {
  std::lock_guard<std::mutex> lock(mu_);
  return injected_ ? injected_bound_ : proposal_;
}

void LinkRate::Agreed(double agreed) {
  std::lock_guard<std::mutex> lock(mu_);
  proposal_ = 0;
  if (agreed > 0 && std::isfinite(agreed)) window_[next_++ % kWindow] = agreed;
}

void LinkRate::SetMeasuredForTest(double bound) {
  std::lock_guard<std::mutex> lock(mu_);
  injected_ = true;
  injected_bound_ = bound;
  proposal_ = 0;
  std::fill(window_, window_ + kWindow, 0.0);
}

}  // namespace sieve::plan
