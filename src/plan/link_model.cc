#include "plan/link_model.h"

#include <algorithm>
#include <cmath>

#include "core/status.h"

namespace sieve::plan {

double RateOr(const Link& link, double assumed) {
  return link.rate_Bps > 0 ? link.rate_Bps : assumed;
}

int TreeDepth(int n) {
  int depth = 0;
  for (long last = n - 1; last > 0; last = (last - 1) / 2) ++depth;
  return depth;
}

AllReduceEstimate EstimateAllReduce(int n, size_t wire_bytes, const Link& link,
                                    size_t segment_bytes, size_t one_shot_image) {
  const double a = link.rtt_s / 2, r = RateOr(link, kChoiceRateBps);
  const double b = static_cast<double>(wire_bytes);
  const double ring_bytes = 2.0 * (n - 1) / n * b;
  const int steps = 2 * (n - 1);
  AllReduceEstimate e;
  e.ring_s = steps * a + ring_bytes / r;
  if (link.rate_Bps > 0) {
    const double chunk_s = b / n / r;
    const double seg_s = std::min(static_cast<double>(segment_bytes) / r, chunk_s);
    e.ring_s = (steps - 1) * std::max(chunk_s, a + seg_s) + chunk_s + a;
  }
  e.tree_s = 2.0 * TreeDepth(n) * a + 3.0 * b / r;
  e.direct_s = 2.0 * a + ring_bytes / r;
  const size_t image = one_shot_image > 0 ? one_shot_image : wire_bytes;
  e.one_shot_s = a + (n - 1) * static_cast<double>(image) / r;
  return e;
}

bool LatencyMatters(const Link& link) { return link.rtt_s >= kLocalRttS; }

algo::OpAlgo ChooseForLink(int n, size_t wire_bytes, const Link& link, std::string* why,
                           size_t one_shot_max, size_t segment_bytes,
                           size_t one_shot_image, double* pick_s) {
  const AllReduceEstimate e =
      EstimateAllReduce(n, wire_bytes, link, segment_bytes, one_shot_image);
  algo::OpAlgo pick = algo::OpAlgo::kRing;
  double best = e.ring_s;
  // The bound overstates the ring; the pipelined estimate (a known rate) does not.
  const double gain = link.rate_Bps > 0 ? 1.0 : kDirectGain;
  if (e.direct_s < gain * best) {
    pick = algo::OpAlgo::kDirect;
    best = e.direct_s;
  }
  if (n >= 3 && e.tree_s < best) {
    pick = algo::OpAlgo::kTree;
    best = e.tree_s;
  }
  const size_t image = one_shot_image > 0 ? one_shot_image : wire_bytes;
  const bool one_shot_fits =
      (one_shot_image > 0 || wire_bytes <= one_shot_max) &&
      static_cast<double>(n - 1) * static_cast<double>(image) <= kMaxOneShotBytes;
  // Against a compressed call's direct exchange at its own bytes (codes, then
  // sums: the model's 2(n-1)/n x wire_bytes counts sums both ways).
  const double codes_and_sums =
      static_cast<double>(one_shot_image) + static_cast<double>(wire_bytes);
  const double direct_codes_s =
      link.rtt_s + (n - 1.0) / n * codes_and_sums / RateOr(link, kChoiceRateBps);
  if (one_shot_fits && (one_shot_image > 0
                            ? e.one_shot_s < kDirectGain * std::min(best, direct_codes_s)
                            : e.one_shot_s < best)) {
    pick = algo::OpAlgo::kOneShot;
    best = e.one_shot_s;
  }
  *why = StrFormat(
      "round trip %.3g ms, %s %.3g Gbit/s: model ring %.3g ms, tree %.3g ms, "
      "direct %.3g ms",
      link.rtt_s * 1e3, link.rate_Bps > 0 ? "rate" : "rate unknown (SIEVE_LINK_RATE), assumed",
      RateOr(link, kChoiceRateBps) * 8e-9, e.ring_s * 1e3, e.tree_s * 1e3, e.direct_s * 1e3);
  if (one_shot_fits) *why += StrFormat(", one-shot %.3g ms", e.one_shot_s * 1e3);
  if (pick_s != nullptr) *pick_s = best;
  return pick;
}

bool ValuesOneShotPays(int n, size_t value_bytes, const Link& link, double codes_s,
                       double* values_s) {
  const double a = link.rtt_s / 2;
  const double copies = (n - 1.0) * static_cast<double>(value_bytes);
  *values_s = a + copies / RateOr(link, kChoiceRateBps);
  return copies <= kMaxOneShotBytes && *values_s < kDirectGain * (a + codes_s);
}

bool TreeOnLan(int n, size_t bytes, const Link& link) {
  const double b = static_cast<double>(bytes), r = RateOr(link, kChoiceRateBps);
  const double tree_s = 2.0 * TreeDepth(n) * kLanStepS + 3.0 * b / r;
  const double ring_s = 2.0 * (n - 1) * kLanStepS + 2.0 * (n - 1) / n * b / r;
  return tree_s < ring_s + kLanTreeMarginS;
}

size_t InflightBytes(const Link& link, size_t segment_bytes) {
  const double bdp = RateOr(link, kAssumedRateBps) * link.rtt_s;
  const double want = bdp + 2.0 * static_cast<double>(segment_bytes);
  if (!(want < static_cast<double>(kMaxInflightBytes))) return kMaxInflightBytes;
  return std::max(kMinInflightBytes, static_cast<size_t>(want));
}

bool ScalesInOneExchange(int n, size_t scale_bytes, const Link& link) {
  (void)link;  // pipelined with the ring, the one exchange pays on a local link too
  return n >= 2 &&
         static_cast<double>(n - 1) * static_cast<double>(scale_bytes) <= kOneExchangeBytes;
}

}  // namespace sieve::plan
