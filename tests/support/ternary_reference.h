// Inputs and the bit-exact expected result of the ternary all-reduce,
// computable on one process from every rank's (seed, rank) input and the
// Philox (seed, rank, step) stream, element by element.
#ifndef SIEVE_TESTS_SUPPORT_TERNARY_REFERENCE_H_
#define SIEVE_TESTS_SUPPORT_TERNARY_REFERENCE_H_

#include <cstdint>
#include <vector>

#include "kernels/philox.h"
#include "sieve.h"

namespace sieve_test {

// Rank `rank`'s gradient: uniform in [-1, 1] (splitmix64 of seed/rank/index)
// times a per-256-element magnitude in {1, 1/8, 8}, every 13th element 0,
// rounded to dtype (float32, float16 or bfloat16).
void FillTernaryInput(uint64_t seed, int rank, sieveDataType_t dtype, size_t count, void* out);

// The public parameter struct in one expression (block 0: the default 2048).
inline sieveTernaryParams_t TernaryParams(uint64_t seed, uint64_t step, size_t block = 0,
                                          sieveMask_t mask = nullptr, int error_feedback = 0) {
  sieveTernaryParams_t p = {};
  p.seed = seed;
  p.step = step;
  p.block_size = block;
  p.mask = mask;
  p.error_feedback = error_feedback;
  return p;
}

// Element j of a float32/float16/bfloat16 buffer widened to float.
float LoadWidened(sieveDataType_t dtype, const void* buf, size_t j);
// Bytes per element of a float32/float16/bfloat16 buffer.
inline size_t TernaryElemSize(sieveDataType_t dtype) { return dtype == sieveFloat32 ? 4 : 2; }
// Elements whose bytes differ, where a NaN matches any NaN (the oracle's NaN bits
// need not be the library's).
long CountDifferent(sieveDataType_t dtype, const char* got, const char* want, size_t count);
// Registers the same mask on every rank for `count` elements (about 2/3 kept,
// sieveMaskStrict); *kept gets it. nullptr when the registration fails.
sieveMask_t RegisterSomeMask(sieveComm_t comm, size_t count, std::vector<bool>* kept);

struct TernaryCase {
  uint64_t input_seed = 1;
  int nranks = 2;
  sieveDataType_t dtype = sieveFloat32;
  sieveRedOp_t op = sieveSum;
  size_t count = 1;
  size_t block = 2048;
  uint64_t seed = 0;  // Philox seed and step
  uint64_t step = 0;
  // Levels per sign L (sieveAllReduceQuantized; 1: ternary): codes in [-L, L],
  // result s * Q / L (sum) or s * Q / (nL) (avg), residual g + e - s * q / L.
  int levels = 1;
  // Masked + ternary: elements j with !(*kept)[j] are dropped before
  // quantization (Philox indices and blocks count kept elements) and are 0 in
  // the result. nullptr: every element is kept.
  const std::vector<bool>* kept = nullptr;
  // The contributing ranks (their inputs and Philox keys; an average divides by
  // their number), ascending: a subnet group's (subnet_reference.h). nullptr:
  // ranks 0 .. nranks-1.
  const std::vector<int>* ranks = nullptr;
  // Non-finite input: element poison_index of rank poison_rank's gradient is
  // replaced by poison_value (-1: none).
  int poison_rank = -1;
  size_t poison_index = 0;
  float poison_value = 0.0f;
};

// Rank `rank`'s input of case c as the caller passes it: FillTernaryInput,
// then the poisoned element (bytes of dtype, c.count elements).
std::vector<char> TernaryCaseInput(const TernaryCase& c, int rank);

// q in {-1, 0, 1} of element j (Philox index) of the rank with stream `rng`
// holding g against scale s: keep iff U < |g| / s * 2^32 (exact; U the 32-bit
// uniform of philox.h's 16 bits and 16 refinement bits), sign of g; 0 unless s > 0.
// With L levels: y = (|g| / s) * L in float32, |q| = floor(y) + [U < (y - floor(y)) * 2^32]
// (in double, exact), at most L.
int TernaryReferenceCode(const sieve::kernels::PhiloxStream& rng, size_t j, float g, float s,
                         int levels = 1);

// The contributing ranks of c: *c.ranks, or 0 .. nranks-1.
std::vector<int> CaseRanks(const TernaryCase& c);

// Per-block agreed scales s_b = max over ranks and the block of |g| (kept
// elements); NaN where any rank's block holds a NaN or an infinity.
std::vector<float> ExpectedScales(const TernaryCase& c);
// Q[j] = sum over ranks of q_r[j].
std::vector<int> ExpectedSums(const TernaryCase& c, const std::vector<float>& scales);
// The result every rank must hold, as bytes of dtype.
std::vector<char> ExpectedTernary(const TernaryCase& c);
// With error feedback from zero residuals: the results of `steps` calls with
// the same inputs at steps c.step, c.step + 1, ... (each rank sends g + e
// rounded to dtype and keeps e = g + e - s * q / L in float32; the scales are
// the gradients' alone, NaN where a block's residual is NaN). Rank `without` (if >= 0)
// has no feedback: it sends g every step.
std::vector<std::vector<char>> ExpectedTernaryFeedback(const TernaryCase& c, int steps,
                                                       int without = -1);

// sieveAllGatherQuantized's error bound (include/sieve.h) for element x of a block whose
// max |x| is m, at `bits` bits: half a step s = m / (2^(bits-1) - 1), plus the datatype's
// rounding of x and s.
double QuantizedGatherBound(sieveDataType_t dtype, int bits, float m, double x);

// Exact bytes rank r sends in one ring all-reduce of `count` elements at `levels`
// levels (1: ternary) over n ranks: the bit-growth formula, partial sums of k ranks
// in ceil(log2(2kL + 1)) bits, per segment of `segment_elems` input elements (0: one
// segment per chunk), plus this rank's float32 block scales and its float32 rate
// proposal (plan::LinkRate) to every peer.
uint64_t ExpectedBytesSent(size_t count, size_t block, int n, int r, size_t segment_elems,
                           int levels = 1);

// Exact bytes a rank sends in one quantized reduce-scatter of `count` elements per
// rank at `levels` over n ranks (one segment per chunk): at step k (1..n-1) a chunk
// of partial sums of k ranks in ceil(log2(2kL + 1)) bits, rounded up to a byte,
// plus this rank's ceil(count * n / block) float32 scales to each of the n - 1 peers.
uint64_t ExpectedScatterBytes(size_t count, size_t block, int n, int levels);

// Expected result of the hierarchical ternary all-reduce on 2 ranks per host (every rank's
// input in `inputs`, rank r on host r / 2): host sums rounded to the type, quantized once per
// host slice (ternary_reference.cc says how), at `levels` levels (1: ternary).
std::vector<char> ExpectedHierTernary(const std::vector<std::vector<char>>& inputs,
                                      sieveDataType_t t, sieveRedOp_t op, size_t count,
                                      size_t block, uint64_t seed, uint64_t step,
                                      int levels = 1);

}  // namespace sieve_test

#endif  // SIEVE_TESTS_SUPPORT_TERNARY_REFERENCE_H_
