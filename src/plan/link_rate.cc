// The single link-rate learner of plan/link_rate.h.
#include "plan/link_rate.h"

#include <algorithm>
#include <cmath>

namespace sieve::plan {

double RateLowerBound(double bytes, double seconds, double one_way_s) {
  const double t = seconds - one_way_s;
  return t > 0 ? bytes / t : 0;
}

double RateBoundOf(const RateSample& s) {
  if (!s.one_kind_of_link || s.sent < kMinRateSampleBytes) return 0;
  if (s.algo != algo::OpAlgo::kRing && s.algo != algo::OpAlgo::kTree) return 0;
  return RateLowerBound(static_cast<double>(s.sent), s.seconds, s.one_way_s);
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
