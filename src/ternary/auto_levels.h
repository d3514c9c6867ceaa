// Auto levels (docs/modes.md, "auto"): per call, dense or L levels, as
// plan::ChooseCompression says from what the ranks measured, the same on every rank.
//
// What a rank measures: its kernels' cost per element (the quantized path's and
// the dense reduction's, timed once per communicator on a small buffer at its
// first auto call, at every L of plan::kAutoLevels, then the quantized path's from its
// own quantized calls: their time less the bytes at the rate and less what they waited
// for peers that arrived late). The link's rate is
// SIEVE_LINK_RATE where set; else the communicator's one rate learner
// (plan/link_rate.h) holds a proven lower bound on it, agreed by every rank, which the
// algorithm choice reads too: auto's dense calls feed it (quantized calls feed it
// themselves), auto's agreements carry its proposals, and the policy decides at that
// bound. The ranks count the bytes their auto calls sent (the budget of the dense
// calls that measure the rate: plan::AccrueExploration). Ranks differ (load, timing
// noise), so the choice uses only agreed inputs: at the 1st to 4th auto call of the
// communicator and every 16th after, every rank all-reduces its {1/stated rate,
// 1/rate proposal, costs, factors} with max (one tiny dense all-reduce, as the mask
// tracker's flags: the slowest rate, the smallest bound, the slowest kernels). Between
// agreements the costs stay fixed, the learned bound changes only at agreements every
// rank heard, and the choice is a pure function of them, the budget (itself a function
// of earlier choices and sizes) and the call's size (the same library computes the
// same bits), so every rank issues the same collective. Calls below
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

// This rank's own inputs (0: not known). The rate's learned bound is not among them:
// tests inject it on the learner (plan::LinkRate::SetMeasuredForTest).
struct AutoMeasurements {
  double rate_Bps = 0;             // as SIEVE_LINK_RATE states it
  double codec_s_per_element = 0;  // at L = 1
  double dense_s_per_element = 0;
  // At plan::kAutoLevels[i] over L = 1.
  double codec_factor[plan::kNumAutoLevels] = {1, 1, 1, 1, 1, 1, 1};
};
// What this rank has measured so far (its kernels, as its calls refine them), before
// the agreement takes the max over the ranks.
AutoMeasurements AutoLocalMeasurements(Comm& comm);
// Tests: these replace what this rank measures, from its next auto call on, which
// agrees anew (every rank must call it before the same auto call).
void SetAutoMeasurementsForTest(Comm& comm, const AutoMeasurements& m);

}  // namespace sieve::ternary

#endif  // SIEVE_TERNARY_AUTO_LEVELS_H_
