// Auto levels (docs/modes.md, "auto"): per call, dense or L levels, as
// plan::ChooseCompression says from what the ranks measured, the same on every rank.
//
// What a rank measures: its kernels' cost per element (the quantized path's and
// the dense reduction's, timed once per communicator on a small buffer at its
// first auto call, at every L of plan::kAutoLevels, then the quantized path's from its
// own quantized calls: their time less the bytes at the agreed rate), and the link's rate from its
// own dense auto calls (bytes sent over the time less the kernels' and the latency's share), or
// SIEVE_LINK_RATE where set; from calls that sent 256 KiB or more. Until the rate is known, every
// such call that ran a ring or a tree with one rank per host also proves a lower bound on it
// (plan::RateLowerBound; the largest so far), at which
// the policy decides, and the ranks count the bytes their auto calls sent (the budget of a dense
// call that measures the rate: plan::AccrueExploration). Ranks differ (load, timing
// noise), so the choice uses only agreed inputs: at the 1st to 4th auto call of the communicator
// and every 16th after, every rank all-reduces its {1/rate, 1/lower bound, costs, factors} with max
// (one tiny dense all-reduce, as the mask tracker's flags: the slowest rate, the smallest bound,
// the slowest kernels). Between agreements the inputs stay fixed, and the choice is a pure function
// of them, the budget (itself a function of earlier choices and sizes) and the call's size
// (the same library computes the same bits), so every rank issues the same collective. Calls below
// plan::kMinAutoElements are dense without agreement.
#ifndef SIEVE_TERNARY_AUTO_LEVELS_H_
#define SIEVE_TERNARY_AUTO_LEVELS_H_

#include <cstddef>
#include <functional>

#include "comm/comm.h"
#include "kernels/dtype.h"
#include "plan/compression_choice.h"

namespace sieve::ternary {

// The levels value that asks for the automatic choice (SIEVE_LEVELS_AUTO).
constexpr int kLevelsAuto = -1;

// Runs one call of `elements` quantized elements (under a mask, the kept ones) of
// `dtype` in blocks of `block`: run(plan::kAutoDense) runs it dense, run(L) at L
// levels. Logs at INFO whenever the choice for a size changes.
using LevelsRun = std::function<Status(int levels)>;
Status RunWithAutoLevels(Comm& comm, size_t elements, kernels::DType dtype, size_t block,
                         const LevelsRun& run);

// The choice of this rank's latest auto call: plan::kAutoDense or L; -1 before any.
int LastAutoLevels(Comm& comm);

// This rank's own measurements (0: not known).
struct AutoMeasurements {
  double rate_Bps = 0;
  double codec_s_per_element = 0;  // at L = 1
  double dense_s_per_element = 0;
  // At plan::kAutoLevels[i] over L = 1.
  double codec_factor[plan::kNumAutoLevels] = {1, 1, 1, 1, 1, 1, 1};
  double rate_lower_Bps = 0;  // where rate_Bps is 0: the largest lower bound proven (0: none)
};
// Tests: these replace what this rank measures, from its next auto call on, which
// agrees anew (every rank must call it before the same auto call).
void SetAutoMeasurementsForTest(Comm& comm, const AutoMeasurements& m);

}  // namespace sieve::ternary

#endif  // SIEVE_TERNARY_AUTO_LEVELS_H_
