// The auto policy of plan/compression_choice.h.
#include "plan/compression_choice.h"

#include <algorithm>
#include <cmath>

#include "core/status.h"
#include "kernels/ternary.h"

namespace sieve::plan {

double RingBytesSent(const CompressionInputs& in, int levels) {
  const int n = in.nranks;
  const double e = static_cast<double>(in.elements);
  if (n < 2) return 0;
  if (levels == kAutoDense) return 2.0 * (n - 1) / n * e * static_cast<double>(in.element_bytes);
  const double chunk = e / n;
  double bits = 0;
  for (int k = 1; k < n; ++k) bits += chunk * kernels::TernaryBits(k * levels);
  bits += (n - 1) * chunk * kernels::TernaryBits(n * levels);
  const double blocks = in.block > 0 ? std::ceil(e / static_cast<double>(in.block)) : 0;
  return bits / 8 + 4.0 * blocks * (n - 1);
}

int AutoLevelIndex(int levels) {
  for (int i = 0; i < kNumAutoLevels; ++i)
    if (kAutoLevels[i] == levels) return i;
  return -1;
}

double PredictSeconds(const CompressionInputs& in, int levels) {
  const int n = in.nranks;
  const double e = static_cast<double>(in.elements);
  const double latency = (n - 1) * in.link.rtt_s;  // 2(n-1) one-way delays
  const int i = AutoLevelIndex(levels);
  const double per_element = levels == kAutoDense
                                 ? in.dense_s_per_element
                                 : in.codec_s_per_element * (i >= 0 ? in.codec_factor[i] : 1.0);
  return latency + RingBytesSent(in, levels) / in.link.rate_Bps + e * per_element;
}

std::string LevelsName(int levels) {
  return levels == kAutoDense ? "dense" : StrFormat("q%d", levels);
}

namespace {

// The policy at a known rate (or at a lower bound on it).
CompressionChoice ChooseAtRate(const CompressionInputs& in) {
  CompressionChoice c;
  c.dense_s = PredictSeconds(in, kAutoDense);
  double fastest = c.dense_s;
  for (int l : kAutoLevels) fastest = std::min(fastest, PredictSeconds(in, l));
  // The most accurate within the slack: dense, then the largest L.
  const double bound = fastest * (1 + kAccuracySlack);
  if (c.dense_s <= bound) {
    c.predicted_s = c.dense_s;
  } else {
    for (int l : kAutoLevels) {
      const double t = PredictSeconds(in, l);
      if (t <= bound) {
        c.levels = l;
        c.predicted_s = t;
      }
    }
  }
  c.why = StrFormat(
      "predicted %.3g ms (dense %.3g ms, fastest %.3g ms) at %.3g Gbit/s, codec %.3g ns/element "
      "(x%.2g at L = 7, x%.2g at 127), dense %.3g ns/element, %d ranks",
      c.predicted_s * 1e3, c.dense_s * 1e3, fastest * 1e3, in.link.rate_Bps * 8e-9,
      in.codec_s_per_element * 1e9, in.codec_factor[AutoLevelIndex(7)],
      in.codec_factor[kNumAutoLevels - 1], in.dense_s_per_element * 1e9, in.nranks);
  return c;
}

}  // namespace

CompressionChoice ChooseCompression(const CompressionInputs& in) {
  if (in.nranks < 2 || in.elements < kMinAutoElements) {
    CompressionChoice c;
    c.why = StrFormat("fewer than %zu elements or one rank", kMinAutoElements);
    return c;
  }
  if (in.link.rate_Bps > 0) return ChooseAtRate(in);
  // Rate not known: decide at the lower bound (no bound yet: the most compressed level).
  CompressionChoice c;
  if (in.rate_lower_Bps > 0) {
    CompressionInputs at_bound = in;
    at_bound.link.rate_Bps = in.rate_lower_Bps;
    c = ChooseAtRate(at_bound);
    c.why = "rate not known, at its lower bound: " + c.why;
  } else {
    c.levels = kAutoLevels[0];
    c.why = "rate not known (SIEVE_LINK_RATE unset, nothing measured yet): the most compressed";
  }
  if (c.levels == kAutoDense) return c;
  const double cost = RingBytesSent(in, kAutoDense) - RingBytesSent(in, c.levels);
  if (std::ldexp(cost, std::min(in.explorations, 60)) <= in.explore_bytes) {
    c.levels = kAutoDense;
    c.explores = true;
    c.explore_cost_bytes = cost;
    c.predicted_s = 0;
    c.why = StrFormat("dense to measure the rate (%.3g MB over the choice, budget %.3g MB); ",
                      cost * 1e-6, in.explore_bytes * 1e-6) +
            c.why;
  }
  return c;
}

double AccrueExploration(double budget, const CompressionInputs& in,
                         const CompressionChoice& choice) {
  return budget + kAccuracySlack * RingBytesSent(in, choice.levels) - choice.explore_cost_bytes;
}

}  // namespace sieve::plan
