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
#ifndef SIEVE_PLAN_COMPRESSION_CHOICE_H_
#define SIEVE_PLAN_COMPRESSION_CHOICE_H_

#include <cstddef>
#include <string>

#include "plan/link_model.h"

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
  Link link;                 // rate_Bps 0: not known (no transfer measured, no SIEVE_LINK_RATE)
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
  double predicted_s = 0;   // of the choice (0 where the rate is not known)
  double dense_s = 0;       // of dense, for the INFO line
  std::string why;
};

// The policy above. Dense where there is one rank, fewer than kMinAutoElements, or
// no known rate (dense measures the link for the next choice).
CompressionChoice ChooseCompression(const CompressionInputs& in);

// "dense" or "qL" (q1 is ternary), as sieve-perf spells the modes.
std::string LevelsName(int levels);

}  // namespace sieve::plan

#endif  // SIEVE_PLAN_COMPRESSION_CHOICE_H_
