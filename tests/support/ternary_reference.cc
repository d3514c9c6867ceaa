// The ternary oracle, written from DESIGN.md 1.3 one element at a time; only
// the Philox generator (checked against known answers) and its keying
// (kernels/philox.h) are shared with the library.
#include "support/ternary_reference.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "kernels/dtype.h"
#include "kernels/philox.h"
#include "support/splitmix.h"

namespace sieve_test {

namespace {

float Round(sieveDataType_t dtype, float v) {
  if (dtype == sieveFloat16) return sieve::kernels::HalfToFloat(sieve::kernels::FloatToHalf(v));
  if (dtype == sieveBfloat16) return sieve::kernels::Bf16ToFloat(sieve::kernels::FloatToBf16(v));
  return v;
}

void StoreAs(sieveDataType_t dtype, float v, char* out) {
  if (dtype == sieveFloat32) {
    std::memcpy(out, &v, 4);
  } else {
    uint16_t h = dtype == sieveFloat16 ? sieve::kernels::FloatToHalf(v)
                                       : sieve::kernels::FloatToBf16(v);
    std::memcpy(out, &h, 2);
  }
}

// Rank r's input as the ternary all-reduce sees it, widened: every element, or
// only the kept ones in order.
std::vector<float> QuantizedInput(const TernaryCase& c, int r) {
  std::vector<char> full = TernaryCaseInput(c, r);
  std::vector<float> in;
  for (size_t j = 0; j < c.count; ++j)
    if (c.kept == nullptr || (*c.kept)[j]) in.push_back(LoadWidened(c.dtype, full.data(), j));
  return in;
}

std::vector<float> ScalesOf(const TernaryCase& c, const std::vector<std::vector<float>>& sent) {
  const size_t count = sent[0].size();
  std::vector<float> scales((count + c.block - 1) / c.block, 0.0f);
  for (const std::vector<float>& in : sent)
    for (size_t j = 0; j < count; ++j)
      scales[j / c.block] = std::fmax(scales[j / c.block], std::fabs(in[j]));
  // A block holding a NaN or an infinity anywhere has a NaN scale.
  for (const std::vector<float>& in : sent)
    for (size_t j = 0; j < count; ++j)
      if (!std::isfinite(in[j])) scales[j / c.block] = std::numeric_limits<float>::quiet_NaN();
  return scales;
}

// The result from every rank's sent values (sent[i]: CaseRanks(c)[i]'s) at `step`
// against `scales`; with `sums` (g + e per rank), updates them into the residuals.
std::vector<char> ResultOf(const TernaryCase& c, const std::vector<std::vector<float>>& sent,
                           const std::vector<float>& scales, uint64_t step,
                           std::vector<std::vector<float>>* sums) {
  const size_t count = sent[0].size(), es = c.dtype == sieveFloat32 ? 4 : 2;
  const std::vector<int> ranks = CaseRanks(c);
  std::vector<int> q(count, 0);
  for (size_t i = 0; i < ranks.size(); ++i) {
    sieve::kernels::PhiloxStream rng{c.seed, static_cast<uint32_t>(ranks[i]), step};
    for (size_t j = 0; j < count; ++j) {
      const float s = scales[j / c.block];
      const int code = TernaryReferenceCode(rng, j, sent[i][j], s, c.levels);
      q[j] += code;
      if (sums != nullptr)
        (*sums)[i][j] =
            (*sums)[i][j] - s * static_cast<float>(code) / static_cast<float>(c.levels);
    }
  }
  std::vector<char> out(c.count * es, 0);  // masked-out elements: 0 (all-zero bits)
  for (size_t j = 0, k = 0; j < c.count; ++j) {
    if (c.kept != nullptr && !(*c.kept)[j]) continue;
    float v = scales[k / c.block] * static_cast<float>(q[k]);
    ++k;
    const int divisor = c.levels * (c.op == sieveAvg ? static_cast<int>(ranks.size()) : 1);
    if (divisor != 1) v /= static_cast<float>(divisor);
    StoreAs(c.dtype, v, out.data() + es * j);
  }
  return out;
}

// Length of chunk c of count elements over n ranks (the ring's balanced split).
size_t ChunkLen(size_t count, int n, int c) {
  auto bound = [&](int i) {
    return static_cast<size_t>((static_cast<unsigned __int128>(count) * i) / n);
  };
  return bound(c + 1) - bound(c);
}

size_t Bits(int k) {
  size_t w = 1;
  while ((size_t{1} << w) < 2 * static_cast<size_t>(k) + 1) ++w;
  return w;
}

// Packed bytes of `len` elements at `bits` each.
uint64_t Packed(size_t len, size_t bits) { return (len * bits + 7) / 8; }

}  // namespace

std::vector<char> TernaryCaseInput(const TernaryCase& c, int rank) {
  std::vector<char> in(c.count * 4);
  FillTernaryInput(c.input_seed, rank, c.dtype, c.count, in.data());
  if (rank == c.poison_rank)
    StoreAs(c.dtype, c.poison_value, in.data() + c.poison_index * (c.dtype == sieveFloat32 ? 4 : 2));
  return in;
}

int TernaryReferenceCode(const sieve::kernels::PhiloxStream& rng, size_t j, float g, float s,
                         int levels) {
  const uint64_t hi = sieve::kernels::PhiloxHalf(sieve::kernels::PhiloxOct(rng, j / 8), j);
  const uint64_t lo = sieve::kernels::PhiloxHalf(sieve::kernels::PhiloxOct(rng, j / 8, true), j);
  const double u = static_cast<double>((hi << 16) | lo);  // uniform in [0, 2^32)
  if (!(s > 0.0f) || std::isnan(g)) return 0;
  const float y = std::fabs(g) / s * static_cast<float>(levels);  // float32, as specified
  if (y >= static_cast<float>(levels)) return g < 0.0f ? -levels : levels;
  const double whole = std::floor(static_cast<double>(y));
  const int m = static_cast<int>(whole) + (u < (static_cast<double>(y) - whole) * 4294967296.0);
  return g < 0.0f ? -m : m;
}

float LoadWidened(sieveDataType_t dtype, const void* buf, size_t j) {
  if (dtype == sieveFloat32) return static_cast<const float*>(buf)[j];
  uint16_t h = static_cast<const uint16_t*>(buf)[j];
  return dtype == sieveFloat16 ? sieve::kernels::HalfToFloat(h) : sieve::kernels::Bf16ToFloat(h);
}

long CountDifferent(sieveDataType_t dtype, const char* got, const char* want, size_t count) {
  long bad = 0;
  const size_t es = TernaryElemSize(dtype);
  for (size_t j = 0; j < count; ++j) {
    if (std::isnan(LoadWidened(dtype, got, j)) && std::isnan(LoadWidened(dtype, want, j))) continue;
    bad += std::memcmp(got + j * es, want + j * es, es) != 0;
  }
  return bad;
}

sieveMask_t RegisterSomeMask(sieveComm_t comm, size_t count, std::vector<bool>* kept) {
  std::vector<uint8_t> bytes(count);
  kept->assign(count, false);
  for (size_t j = 0; j < count; ++j) bytes[j] = (*kept)[j] = (j * 7 + j / 5) % 3 != 1;
  sieveMask_t mask = nullptr;
  if (sieveMaskRegister(comm, bytes.data(), sieveMaskBytes, count, sieveMaskStrict, &mask) !=
      sieveSuccess)
    return nullptr;
  return mask;
}

void FillTernaryInput(uint64_t seed, int rank, sieveDataType_t dtype, size_t count, void* out) {
  static const float kMagnitude[3] = {1.0f, 0.125f, 8.0f};
  for (size_t j = 0; j < count; ++j) {
    uint64_t bits = SplitMix(SplitMix(seed * 1000003 + static_cast<uint64_t>(rank)) + j);
    float u = static_cast<float>(bits >> 40) / 16777216.0f;  // [0, 1)
    float g = (2.0f * u - 1.0f) * kMagnitude[(j / 256) % 3];
    if (j % 13 == 0) g = 0.0f;
    StoreAs(dtype, g, static_cast<char*>(out) + j * (dtype == sieveFloat32 ? 4 : 2));
  }
}

std::vector<int> CaseRanks(const TernaryCase& c) {
  if (c.ranks != nullptr) return *c.ranks;
  std::vector<int> all(static_cast<size_t>(c.nranks));
  for (int r = 0; r < c.nranks; ++r) all[static_cast<size_t>(r)] = r;
  return all;
}

std::vector<float> ExpectedScales(const TernaryCase& c) {
  std::vector<std::vector<float>> sent;
  for (int r : CaseRanks(c)) sent.push_back(QuantizedInput(c, r));
  return ScalesOf(c, sent);
}

std::vector<int> ExpectedSums(const TernaryCase& c, const std::vector<float>& scales) {
  std::vector<int> sums;
  for (int r : CaseRanks(c)) {
    const std::vector<float> in = QuantizedInput(c, r);
    sums.resize(in.size(), 0);
    sieve::kernels::PhiloxStream rng{c.seed, static_cast<uint32_t>(r), c.step};
    for (size_t j = 0; j < in.size(); ++j)
      sums[j] += TernaryReferenceCode(rng, j, in[j], scales[j / c.block], c.levels);
  }
  return sums;
}

std::vector<char> ExpectedTernary(const TernaryCase& c) {
  std::vector<std::vector<float>> sent;
  for (int r : CaseRanks(c)) sent.push_back(QuantizedInput(c, r));
  return ResultOf(c, sent, ScalesOf(c, sent), c.step, nullptr);
}

std::vector<std::vector<char>> ExpectedTernaryFeedback(const TernaryCase& c, int steps,
                                                       int without) {
  std::vector<std::vector<float>> g, residual;
  for (int r : CaseRanks(c)) {
    g.push_back(QuantizedInput(c, r));
    residual.emplace_back(g.back().size(), 0.0f);
  }
  std::vector<std::vector<char>> results;
  for (int t = 0; t < steps; ++t) {
    // The scale is the gradient's (not g + e's), NaN where a block's residual is: a NaN
    // scale at an earlier step left it so.
    std::vector<float> scales = ScalesOf(c, g);
    for (const std::vector<float>& e : residual)
      for (size_t j = 0; j < e.size(); ++j)
        if (std::isnan(e[j])) scales[j / c.block] = std::numeric_limits<float>::quiet_NaN();
    std::vector<std::vector<float>> sent = g;
    for (size_t r = 0; r < g.size(); ++r)
      for (size_t j = 0; j < g[r].size(); ++j) {
        residual[r][j] = g[r][j] + residual[r][j];  // the float32 sum; becomes e below
        sent[r][j] = Round(c.dtype, residual[r][j]);
      }
    results.push_back(ResultOf(c, sent, scales, c.step + static_cast<uint64_t>(t), &residual));
    const std::vector<int> ranks = CaseRanks(c);
    for (size_t r = 0; r < ranks.size(); ++r)
      if (ranks[r] == without) std::fill(residual[r].begin(), residual[r].end(), 0.0f);
  }
  return results;
}

uint64_t ExpectedScatterBytes(size_t count, size_t block, int n, int levels) {
  uint64_t total = 0;
  for (int k = 1; k < n; ++k) total += Packed(count, Bits(k * levels));
  const size_t nblocks = (count * static_cast<size_t>(n) + block - 1) / block;
  return total + 4 * nblocks * static_cast<uint64_t>(n - 1);
}

// Reduce-scatter step k sends chunk r-k-1 carrying k+1 contributions in
// ceil(len * bits((k+1)L) / 8) bytes per segment; all-gather step k sends chunk
// r-k with final sums in ceil(len * bits(nL) / 8) bytes per segment; plus this
// rank's abs-max of each of the nb = ceil(count / block) blocks, a float32 to
// every peer (ternary_scales.h: one round, pieces in the ring's order):
// 4 * nb * (n - 1) bytes.
// Segments: a segment holds `segment_elems` elements (SIEVE_SEGMENT_BYTES of
// float32 input; 0: one segment per chunk), so every chunk is cut into
// ceil(largest chunk's final wire / one segment's final wire) equal parts.
uint64_t ExpectedBytesSent(size_t count, size_t block, int n, int r, size_t segment_elems,
                           int levels) {
  size_t segments = 1;
  if (segment_elems > 0) {
    uint64_t largest = 0;
    for (int c = 0; c < n; ++c)
      largest = std::max(largest, Packed(ChunkLen(count, n, c), Bits(n * levels)));
    uint64_t one = Packed(segment_elems, Bits(n * levels));
    segments = std::max<uint64_t>(1, (largest + one - 1) / one);
  }
  auto send = [&](int chunk, size_t bits) {
    uint64_t bytes = 0;
    for (size_t s = 0; s < segments; ++s)
      bytes += Packed(ChunkLen(ChunkLen(count, n, chunk), static_cast<int>(segments),
                               static_cast<int>(s)), bits);
    return bytes;
  };
  uint64_t total = 0;
  for (int k = 0; k < n - 1; ++k) {
    total += send((r - k - 1 + n) % n, Bits((k + 1) * levels));
    total += send((r - k + n) % n, Bits(n * levels));
  }
  size_t nb = (count + block - 1) / block;
  total += 4 * nb * static_cast<uint64_t>(n - 1);
  total += 4 * static_cast<uint64_t>(n - 1);  // the rate it proposes, with the first scales
  return total;
}

namespace {

void StoreRounded(sieveDataType_t t, void* buf, size_t j, float v) {
  if (t == sieveFloat32) {
    static_cast<float*>(buf)[j] = v;
  } else {
    static_cast<uint16_t*>(buf)[j] =
        t == sieveFloat16 ? sieve::kernels::FloatToHalf(v) : sieve::kernels::FloatToBf16(v);
  }
}

}  // namespace

// Expected result of the hierarchical ternary all-reduce on 2 ranks per host:
// host h's input is the sum of its two ranks' inputs rounded to the type; the
// buffer is cut into one slice per local rank at block boundaries; slice i of
// host h is quantized with the Philox stream of rank h*2+i, indices counted
// from the slice start, scales per block over the hosts; avg divides by n.
std::vector<char> ExpectedHierTernary(const std::vector<std::vector<char>>& inputs,
                                      sieveDataType_t t, sieveRedOp_t op, size_t count,
                                      size_t block, uint64_t seed, uint64_t step,
                                      int levels) {
  const int n = static_cast<int>(inputs.size()), local = 2, hosts = n / local;
  std::vector<std::vector<float>> host_sum(hosts, std::vector<float>(count));
  for (int h = 0; h < hosts; ++h)
    for (size_t j = 0; j < count; ++j) {
      std::vector<char> one(4);
      float v =
          LoadWidened(t, inputs[h * 2].data(), j) + LoadWidened(t, inputs[h * 2 + 1].data(), j);
      StoreRounded(t, one.data(), 0, v);
      host_sum[h][j] = LoadWidened(t, one.data(), 0);
    }
  size_t blocks = (count + block - 1) / block;
  std::vector<size_t> slice(local + 1);
  for (int i = 0; i <= local; ++i) slice[i] = std::min(count, blocks * i / local * block);
  std::vector<char> out(count * (t == sieveFloat32 ? 4 : 2));
  for (int i = 0; i < local; ++i) {
    for (size_t j = slice[i]; j < slice[i + 1]; ++j) {
      size_t rel = j - slice[i];
      size_t b0 = slice[i] + rel / block * block, b1 = std::min(slice[i + 1], b0 + block);
      float s = 0;
      for (int h = 0; h < hosts; ++h)
        for (size_t k = b0; k < b1; ++k) s = std::fmax(s, std::fabs(host_sum[h][k]));
      int q = 0;
      for (int h = 0; h < hosts; ++h) {
        sieve::kernels::PhiloxStream rng{seed, static_cast<uint32_t>(h * local + i), step};
        q += TernaryReferenceCode(rng, rel, host_sum[h][j], s, levels);
      }
      float v = s * static_cast<float>(q);
      const int divisor = levels * (op == sieveAvg ? n : 1);
      if (divisor != 1) v /= static_cast<float>(divisor);
      StoreRounded(t, out.data(), j, v);
    }
  }
  return out;
}

double QuantizedGatherBound(sieveDataType_t dtype, int bits, float m, double x) {
  const float s = m / static_cast<float>((1 << (bits - 1)) - 1);
  const double u = dtype == sieveFloat32   ? std::ldexp(1.0, -22)
                   : dtype == sieveFloat16 ? std::ldexp(1.0, -10)
                                           : std::ldexp(1.0, -7);
  return s / 2.0 + u * (std::fabs(x) + s) + std::ldexp(1.0, -25);
}

}  // namespace sieve_test
