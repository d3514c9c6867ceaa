// The automatic choice of compression (docs/modes.md, "auto"): dense or L levels
// for one all-reduce, as a pure function of what the ranks agreed they measured
// (the link, the kernels' cost per element) and the call's size. No I/O, no
// communicator: ternary/auto_levels.h measures, agrees and calls it.
//
// Policy. The accuracy budget: a choice's quantization variance stays within
// ternary's (DESIGN.md 1.3: per element s|g| - g^2; L levels: (s/L)^2 f(1-f), never
// more), so dense and every L in kAutoLevels are admissible and L is never below 1.
// Within the budget it minimizes the predicted call time; among the choices
// predicted within kAccuracySlack of the fastest it takes the most accurate (dense,
// then the largest L), so the slack buys variance, never more than 10% of time.
//
// The model of one call on n ranks (the flat ring; each rank's bytes at the link's
// rate, plus 2(n-1) one-way delays, plus the kernels on this rank, not overlapped):
//   dense:    2(n-1) a + 2(n-1)/n E b / r             + E t_dense
//   L levels: 2(n-1) a + (ring codes + scales) / r      + E t_codec
// E elements of b bytes, a = rtt/2, r the rate; the codes of the ring: hop k of the
// reduce-scatter carries E/n partial sums of k ranks in TernaryBits(kL) bits, each
// all-gather hop E/n final sums in TernaryBits(nL) bits; scales: 4 bytes per block
// to each of n-1 peers. t_codec (abs-max, quantize, pack, unpack, dequantize per
// element) grows with L (more instructions per code; partial sums of nL > 127 are
// int16): t_codec(L) = t_codec(1) x codec_factor[L], the factors measured.
//
// Where the rate is not stated (no SIEVE_LINK_RATE) the costs are not symmetric: dense
// on a slow link costs its bytes at that rate (seconds), the most compressed level on a
// fast link costs only its kernels. So auto never pays a dense call to learn the rate.
// It decides at the proven lower bound on the rate that the communicator's one learner
// holds (plan/link_rate.h; 0 before any: the most compressed level), dense only where
// dense wins even at that bound (dense's lead grows with the rate, so it wins at the
// true rate too), and it spends a dense call to measure the rate only out of an
// exploration budget: kAccuracySlack of the bytes its auto calls sent so far
// (AccrueExploration). A dense call moved early costs at most its extra bytes at the
// true rate, so on a slow link (time ~ bytes) learning the rate costs at most
// kAccuracySlack of the time spent, and a fast link reaches dense after about
// (dense bytes / compressed bytes) / kAccuracySlack calls of one size, or sooner
// through a smaller call. The k-th exploration waits for a budget of 2^k times its
// cost: a bound that a starved CPU made low is measured again (at exponentially spaced
// calls), while a slow link pays a number of explorations that grows only with the
// logarithm of the calls.
#ifndef SIEVE_PLAN_COMPRESSION_CHOICE_H_
#define SIEVE_PLAN_COMPRESSION_CHOICE_H_

#include <cstddef>
#include <string>

#include "plan/link_model.h"
#include "plan/link_rate.h"

namespace sieve::plan {

// The levels auto chooses among (about 2 to 8 bits at the first hop), most
// compressed first; 0 stands for dense.
constexpr int kAutoLevels[] = {1, 3, 7, 15, 31, 63, 127};
constexpr int kNumAutoLevels = sizeof(kAutoLevels) / sizeof(kAutoLevels[0]);
constexpr int kAutoDense = 0;
// Time a more accurate choice may cost over the fastest.
constexpr double kAccuracySlack = 0.10;
// Calls of fewer elements stay dense without asking the ranks (their latency
// decides, and the agreement and the scales would cost more than the bytes save).
constexpr size_t kMinAutoElements = 4096;

struct CompressionInputs {
  int nranks = 1;
  size_t elements = 0;       // elements the call quantizes (under a mask, the kept ones)
  size_t element_bytes = 4;  // the datatype's size (what dense sends per element)
  size_t block = 2048;       // elements per scale block
  Link link;                 // rate_Bps: SIEVE_LINK_RATE's; 0: not stated
  // Where the rate is not stated: the proven lower bound the communicator learned (0:
  // none yet), and the bytes the ranks may still spend, over the choice's, on a dense
  // call that measures it.
  double rate_lower_Bps = 0;
  double explore_bytes = 0;
  int explorations = 0;            // dense calls that measured the rate so far (agreed)
  double codec_s_per_element = 0;  // the quantized path's kernels at L = 1, per element
  double dense_s_per_element = 0;  // the dense reduction, per element
  // The quantized path's cost at kAutoLevels[i] over its cost at L = 1.
  double codec_factor[kNumAutoLevels] = {1, 1, 1, 1, 1, 1, 1};
};

// i with kAutoLevels[i] == levels; -1 if none.
int AutoLevelIndex(int levels);

// Predicted seconds of the call with `levels` (kAutoDense: dense); the rate must be known.
double PredictSeconds(const CompressionInputs& in, int levels);
// Bytes one rank sends in the flat ring with `levels` (dense: 2(n-1)/n E b).
double RingBytesSent(const CompressionInputs& in, int levels);

struct CompressionChoice {
  int levels = kAutoDense;  // kAutoDense or an L of kAutoLevels
  double predicted_s = 0;   // of the choice (at the rate's bound where not known; 0: none)
  double dense_s = 0;       // of dense, for the INFO line
  // Dense only to measure the rate; the bytes it sends over the choice at the bound.
  bool explores = false;
  double explore_cost_bytes = 0;
  std::string why;
};

// The policy above. Dense where there is one rank or fewer than kMinAutoElements.
// Where the rate is not known: the choice at in.rate_lower_Bps (the most compressed
// level where there is none), or dense to measure the rate where that costs at most
// in.explore_bytes / 2^in.explorations more than the choice.
CompressionChoice ChooseCompression(const CompressionInputs& in);

// The exploration budget after a call: kAccuracySlack of the bytes it sent
// (RingBytesSent of its choice) accrue, an exploring call spends its extra bytes.
// A pure function of agreed inputs, so every rank's budget is the same.
double AccrueExploration(double budget, const CompressionInputs& in,
                         const CompressionChoice& choice);

// "dense" or "qL" (q1 is ternary), as sieve-perf spells the modes.
std::string LevelsName(int levels);

}  // namespace sieve::plan

#endif  // SIEVE_PLAN_COMPRESSION_CHOICE_H_
