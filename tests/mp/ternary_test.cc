// sieveAllReduceTernary on real processes: bit-exact against the one-process
// reference (dtypes x ops x block sizes x odd counts x ring/tree x n), unbiased
// over many steps, exact wire byte counts, and argument errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "support/mp_harness.h"
#include "support/ternary_reference.h"

namespace sieve_test {
namespace {

const sieveDataType_t kTypes[] = {sieveFloat32, sieveFloat16, sieveBfloat16};
const size_t kCounts[] = {1, 7, 1001, 65537, 200003};
const size_t kBlocks[] = {1, 7, 2048};

sieveComm_t Init(int rank, int n, const sieveUniqueId& id) {
  sieveComm_t comm = nullptr;
  if (sieveCommInitRank(&comm, n, id, rank) != sieveSuccess) return nullptr;
  return comm;
}

char* Align64(char* p) { return p + (64 - reinterpret_cast<uintptr_t>(p) % 64) % 64; }

// Runs one case on this rank; returns the number of wrong elements (-1: call failed).
long RunCase(sieveComm_t comm, int rank, const TernaryCase& c, bool in_place) {
  size_t bytes = c.count * TernaryElemSize(c.dtype);
  std::vector<char> send(bytes + 1), recv(bytes + 1, 0x5a);
  char* sendp = in_place ? recv.data() : send.data();
  FillTernaryInput(c.input_seed, rank, c.dtype, c.count, sendp);
  sieveTernaryParams_t params = {c.seed, c.step, c.block == 2048 ? 0 : c.block, nullptr, 0};
  if (sieveAllReduceTernary(sendp, recv.data(), c.count, c.dtype, c.op, &params, comm,
                            nullptr) != sieveSuccess) {
    std::fprintf(stderr, "rank %d: %s\n", rank, sieveGetLastError(comm));
    return -1;
  }
  std::vector<char> expected = ExpectedTernary(c);
  long wrong = 0;
  size_t es = TernaryElemSize(c.dtype);
  for (size_t j = 0; j < c.count; ++j)
    if (std::memcmp(recv.data() + j * es, expected.data() + j * es, es) != 0 && wrong++ == 0)
      std::fprintf(stderr, "rank %d: dtype %d op %d count %zu block %zu: first wrong at %zu\n",
                   rank, c.dtype, c.op, c.count, c.block, j);
  if (recv[bytes] != 0x5a) ++wrong;  // wrote past the end
  return wrong;
}

int RunExactness(int rank, int n, const sieveUniqueId& id) {
  sieveComm_t comm = Init(rank, n, id);
  RANK_CHECK(comm != nullptr, "%s", sieveGetLastError(nullptr));
  long bad = 0;
  int k = 0;
  for (sieveDataType_t dtype : kTypes)
    for (sieveRedOp_t op : {sieveSum, sieveAvg})
      for (size_t block : kBlocks) {
        TernaryCase c;
        c.input_seed = 100 + k;
        c.nranks = n;
        c.dtype = dtype;
        c.op = op;
        c.count = kCounts[k % 5];
        c.block = block;
        c.seed = 0x5eed0000ull + k;
        c.step = 1000 + k;
        bad += RunCase(comm, rank, c, /*in_place=*/k % 2 == 1) != 0;
        ++k;
      }
  RANK_CHECK(sieveCommDestroy(comm) == sieveSuccess, "destroy");
  RANK_CHECK(bad == 0, "%ld cases wrong", bad);
  return 0;
}

class TernaryExactTest : public ::testing::TestWithParam<std::tuple<const char*, int>> {};

TEST_P(TernaryExactTest, MatchesReferenceBitForBit) {
  RankSpec spec;
  spec.nranks = std::get<1>(GetParam());
  // Small segments: the ring pipelines many segments of unaligned lengths.
  spec.env = {{"SIEVE_ALGO", std::get<0>(GetParam())}, {"SIEVE_SEGMENT_BYTES", "4k"}};
  EXPECT_EQ(RunRanks(spec, RunExactness), "");
}

INSTANTIATE_TEST_SUITE_P(Algos, TernaryExactTest,
                         ::testing::Combine(::testing::Values("ring", "tree", "direct"),
                                            ::testing::Values(2, 3, 4, 8)));
// The one-shot (every rank adds every input) up to 4 ranks: 8 takes seconds. The
// one-shot of values (every rank quantizes every rank's values): the same bits.
INSTANTIATE_TEST_SUITE_P(OneShot, TernaryExactTest,
                         ::testing::Combine(::testing::Values("oneshot", "oneshot_values"),
                                            ::testing::Values(2, 3, 4)));

// A link with latency (SIEVE_LINK_RTT): the plan picks the direct exchange and
// the scales go in one exchange without a verdict round; still bit for bit.
TEST(TernaryLatencyTest, LinkWithLatencyMatchesReferenceBitForBit) {
  RankSpec spec;
  spec.nranks = 4;
  spec.env = {{"SIEVE_LINK_RTT", "0.05"}, {"SIEVE_SEGMENT_BYTES", "4k"}};
  EXPECT_EQ(RunRanks(spec, RunExactness), "");
}

// Unbiasedness: M steps of the same inputs with fresh steps; the mean of the
// results must be within 5 standard errors of the true sum, where one step's
// variance is sum_r (s |g_r| - g_r^2) (Bernoulli rounding per rank).
constexpr int kSteps = 3000;
constexpr size_t kUnbiasedCount = 257, kUnbiasedBlock = 64;

int RunUnbiased(int rank, int n, const sieveUniqueId& id) {
  sieveComm_t comm = Init(rank, n, id);
  RANK_CHECK(comm != nullptr, "%s", sieveGetLastError(nullptr));
  TernaryCase c;
  c.nranks = n;
  c.count = kUnbiasedCount;
  c.block = kUnbiasedBlock;
  std::vector<float> in(c.count), out(c.count);
  FillTernaryInput(c.input_seed, rank, sieveFloat32, c.count, in.data());
  std::vector<double> mean(c.count, 0.0);
  for (int t = 0; t < kSteps; ++t) {
    sieveTernaryParams_t params = {7, static_cast<uint64_t>(t), c.block, nullptr, 0};
    RANK_CHECK(sieveAllReduceTernary(in.data(), out.data(), c.count, sieveFloat32, sieveSum,
                                     &params, comm, nullptr) == sieveSuccess,
               "%s", sieveGetLastError(comm));
    for (size_t j = 0; j < c.count; ++j) mean[j] += out[j] / static_cast<double>(kSteps);
  }
  std::vector<float> scales = ExpectedScales(c);
  std::vector<std::vector<float>> all(n, std::vector<float>(c.count));
  for (int r = 0; r < n; ++r)
    FillTernaryInput(c.input_seed, r, sieveFloat32, c.count, all[r].data());
  for (size_t j = 0; j < c.count; ++j) {
    double truth = 0, var = 0, s = scales[j / c.block];
    for (int r = 0; r < n; ++r) {
      truth += all[r][j];
      var += s * std::fabs(all[r][j]) - static_cast<double>(all[r][j]) * all[r][j];
    }
    double se = std::sqrt(std::fmax(var, 0.0) / kSteps);
    RANK_CHECK(std::fabs(mean[j] - truth) <= 5 * se + 1e-5 * (s + 1), "element %zu: mean %g, "
               "true sum %g, standard error %g", j, mean[j], truth, se);
  }
  RANK_CHECK(sieveCommDestroy(comm) == sieveSuccess, "destroy");
  return 0;
}

TEST(TernaryStatsTest, MeanConvergesToTrueSum) {
  RankSpec spec;
  spec.nranks = 3;
  EXPECT_EQ(RunRanks(spec, RunUnbiased), "");
}

int RunWireWith(int rank, int n, const sieveUniqueId& id, size_t segment_elems) {
  sieveComm_t comm = Init(rank, n, id);
  RANK_CHECK(comm != nullptr, "%s", sieveGetLastError(nullptr));
  for (size_t count : {size_t{100003}, size_t{4097}}) {
    std::vector<float> in(count), out(count);
    FillTernaryInput(3, rank, sieveFloat32, count, in.data());
    sieveCounters_t before, after;
    RANK_CHECK(sieveCommGetCounters(comm, &before) == sieveSuccess, "counters");
    sieveTernaryParams_t params = {1, 2, 0, nullptr, 0};
    RANK_CHECK(sieveAllReduceTernary(in.data(), out.data(), count, sieveFloat32, sieveAvg,
                                     &params, comm, nullptr) == sieveSuccess,
               "%s", sieveGetLastError(comm));
    RANK_CHECK(sieveCommGetCounters(comm, &after) == sieveSuccess, "counters");
    uint64_t sent = after.bytes_sent - before.bytes_sent;
    uint64_t want = ExpectedBytesSent(count, 2048, n, rank, segment_elems);
    RANK_CHECK(sent == want, "count %zu: sent %llu bytes, formula says %llu", count,
               static_cast<unsigned long long>(sent), static_cast<unsigned long long>(want));
    RANK_CHECK(after.collectives - before.collectives == 1, "one collective per call");
  }
  RANK_CHECK(sieveCommDestroy(comm) == sieveSuccess, "destroy");
  return 0;
}

// SIEVE_SEGMENT_BYTES of float32 input per segment in the segmented case.
constexpr size_t kWireSegmentBytes = 4096;

int RunWire(int rank, int n, const sieveUniqueId& id) { return RunWireWith(rank, n, id, 0); }
int RunWireSegmented(int rank, int n, const sieveUniqueId& id) {
  return RunWireWith(rank, n, id, kWireSegmentBytes / sizeof(float));
}

class TernaryWireTest : public ::testing::TestWithParam<int> {};

TEST_P(TernaryWireTest, BytesSentMatchBitGrowthFormula) {
  RankSpec spec;
  spec.nranks = GetParam();
  spec.env = {{"SIEVE_ALGO", "ring"}, {"SIEVE_SEGMENT_BYTES", "64m"}};
  EXPECT_EQ(RunRanks(spec, RunWire), "");
}

// Segments hold SIEVE_SEGMENT_BYTES of input, not of the ~10x smaller wire:
// 100003 elements on 3 ranks travel in 33 segments per chunk (4 if sized by
// wire bytes), each rounded to whole bytes on its own.
TEST_P(TernaryWireTest, SegmentsHoldAnInputSegmentOfElements) {
  RankSpec spec;
  spec.nranks = GetParam();
  spec.env = {{"SIEVE_ALGO", "ring"},
              {"SIEVE_SEGMENT_BYTES", std::to_string(kWireSegmentBytes)}};
  EXPECT_EQ(RunRanks(spec, RunWireSegmented), "");
}

INSTANTIATE_TEST_SUITE_P(Ranks, TernaryWireTest, ::testing::Values(3, 4));

int RunErrors(int rank, int n, const sieveUniqueId& id) {
  sieveComm_t comm = Init(rank, n, id);
  RANK_CHECK(comm != nullptr, "%s", sieveGetLastError(nullptr));
  std::vector<int32_t> buf(16, 1);
  sieveTernaryParams_t params = {1, 1, 0, nullptr, 0};
  sieveResult_t res = sieveAllReduceTernary(buf.data(), buf.data(), 16, sieveInt32, sieveSum,
                                            &params, comm, nullptr);
  RANK_CHECK(res == sieveInvalidArgument, "int32 gave %d", res);
  RANK_CHECK(std::strstr(sieveGetLastError(comm), "int32") != nullptr, "message: %s",
             sieveGetLastError(comm));
  res = sieveAllReduceTernary(buf.data(), buf.data(), 16, sieveFloat64, sieveSum, &params, comm,
                              nullptr);
  RANK_CHECK(res == sieveInvalidArgument, "float64 gave %d", res);
  res = sieveAllReduceTernary(buf.data(), buf.data(), 16, sieveFloat32, sieveMax, &params, comm,
                              nullptr);
  RANK_CHECK(res == sieveInvalidArgument, "max gave %d", res);
  RANK_CHECK(std::strstr(sieveGetLastError(comm), "max") != nullptr, "message: %s",
             sieveGetLastError(comm));
  res = sieveAllReduceTernary(buf.data(), buf.data(), 16, sieveFloat32, sieveSum, nullptr, comm,
                              nullptr);
  RANK_CHECK(res == sieveInvalidArgument, "NULL params gave %d", res);
  res = sieveAllReduceTernary(buf.data(), buf.data(), 16, sieveFloat32,
                              static_cast<sieveRedOp_t>(99), &params, comm, nullptr);
  RANK_CHECK(res == sieveInvalidArgument, "op 99 gave %d", res);
  uint8_t bits[2] = {0xff, 0x0f};
  sieveMask_t mask = nullptr;
  RANK_CHECK(sieveMaskRegister(comm, bits, sieveMaskBitmap, 16, sieveMaskStrict, &mask) ==
                 sieveSuccess, "%s", sieveGetLastError(comm));
  params.mask = mask;  // registered for 16 elements, used with 15
  res = sieveAllReduceTernary(buf.data(), buf.data(), 15, sieveFloat32, sieveSum, &params, comm,
                              nullptr);
  RANK_CHECK(res == sieveInvalidArgument, "mask with another count gave %d", res);
  RANK_CHECK(sieveMaskDeregister(mask) == sieveSuccess, "deregister");
  // The communicator still works after the rejected calls.
  params.mask = nullptr;
  std::vector<float> f(16, 0.5f);
  RANK_CHECK(sieveAllReduceTernary(f.data(), f.data(), 16, sieveFloat32, sieveAvg, &params, comm,
                                   nullptr) == sieveSuccess, "%s", sieveGetLastError(comm));
  for (float v : f) RANK_CHECK(v == 0.5f, "avg of equal extremes is exact: %g", v);
  RANK_CHECK(sieveCommDestroy(comm) == sieveSuccess, "destroy");
  return 0;
}

TEST(TernaryErrorsTest, BadTypeOpParamsAndMask) {
  RankSpec spec;
  spec.nranks = 2;
  EXPECT_EQ(RunRanks(spec, RunErrors), "");
}


// Masked + ternary: only the kept elements (about 2/3, rank-independent) are
// packed, quantized and summed; masked-out positions are exactly 0. The
// reference quantizes the packed vectors with the same Philox indices.
int RunMaskedTernary(int rank, int n, const sieveUniqueId& id) {
  sieveComm_t comm = nullptr;
  RANK_CHECK(sieveCommInitRank(&comm, n, id, rank) == sieveSuccess, "%s",
             sieveGetLastError(nullptr));
  const size_t count = 30011;
  std::vector<uint8_t> keep_bytes(count);
  std::vector<bool> kept(count);
  for (size_t j = 0; j < count; ++j) {
    kept[j] = (j * 7 + j / 5) % 3 != 1;
    keep_bytes[j] = kept[j] ? 1 : 0;
  }
  sieveMask_t mask = nullptr;
  RANK_CHECK(sieveMaskRegister(comm, keep_bytes.data(), sieveMaskBytes, count, sieveMaskStrict,
                               &mask) == sieveSuccess, "%s", sieveGetLastError(comm));
  for (sieveDataType_t dtype : {sieveFloat32, sieveBfloat16}) {
    for (sieveRedOp_t op : {sieveSum, sieveAvg}) {
      TernaryCase c;
      c.input_seed = 41;
      c.nranks = n;
      c.dtype = dtype;
      c.op = op;
      c.count = count;
      c.block = 100;
      c.seed = 9;
      c.step = 3;
      c.kept = &kept;
      size_t esize = dtype == sieveFloat32 ? 4 : 2;
      std::vector<char> buf(count * esize), out(count * esize);
      FillTernaryInput(c.input_seed, rank, dtype, count, buf.data());
      sieveTernaryParams_t params{c.seed, c.step, c.block, mask, 0};
      RANK_CHECK(sieveAllReduceTernary(buf.data(), out.data(), count, dtype, op, &params, comm,
                                       nullptr) == sieveSuccess, "%s", sieveGetLastError(comm));
      std::vector<char> expected = ExpectedTernary(c);
      RANK_CHECK(std::memcmp(out.data(), expected.data(), out.size()) == 0,
                 "masked ternary differs from the reference (dtype %d op %d)", int(dtype),
                 int(op));
    }
  }
  RANK_CHECK(sieveMaskDeregister(mask) == sieveSuccess, "deregister");
  RANK_CHECK(sieveCommDestroy(comm) == sieveSuccess, "destroy");
  return 0;
}

class MaskedTernaryTest : public ::testing::TestWithParam<int> {};

TEST_P(MaskedTernaryTest, EqualsTheReferenceOnKeptElementsAndZeroElsewhere) {
  RankSpec spec;
  spec.nranks = GetParam();
  EXPECT_EQ(RunRanks(spec, RunMaskedTernary), "");
}

INSTANTIATE_TEST_SUITE_P(Ranks, MaskedTernaryTest, ::testing::Values(2, 3, 4));

// The one-shot in segments (about 40 of 512 wire bytes here), each delivered on its
// own: scattered through the mask and zero-filled range by range.
TEST(MaskedTernaryOneShotTest, InSegmentsEqualsTheReference) {
  RankSpec spec;
  spec.nranks = 4;
  spec.env = {{"SIEVE_ALGO", "oneshot"}, {"SIEVE_SEGMENT_BYTES", "4k"}};
  EXPECT_EQ(RunRanks(spec, RunMaskedTernary), "");
}

// The fused masked + ternary path (gather inside quantization, dequantize with
// unpack and zero-fill per range on the last hop) over random masks of every
// density, every floating type, sum/avg, in and out of place, with segments
// small enough that many ranges are delivered one by one.
int RunMaskedTernarySweep(int rank, int n, const sieveUniqueId& id) {
  sieveComm_t comm = nullptr;
  RANK_CHECK(sieveCommInitRank(&comm, n, id, rank) == sieveSuccess, "%s",
             sieveGetLastError(nullptr));
  long bad = 0;
  uint64_t seed = 500;
  for (double density : {0.0, 0.001, 0.2, 0.5, 0.9, 1.0}) {
    const size_t count = density < 0.01 ? 40009 : 20011;  // odd; 0.001 keeps a few
    std::vector<uint8_t> keep_bytes(count);
    std::vector<bool> kept(count);
    uint64_t x = ++seed * 0x9E3779B97F4A7C15ull;  // the same mask on every rank
    for (size_t j = 0; j < count; ++j) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      kept[j] = static_cast<double>(x % 1000000) < density * 1e6;
      keep_bytes[j] = kept[j] ? 1 : 0;
    }
    sieveMask_t mask = nullptr;
    RANK_CHECK(sieveMaskRegister(comm, keep_bytes.data(), sieveMaskBytes, count, sieveMaskStrict,
                                 &mask) == sieveSuccess, "%s", sieveGetLastError(comm));
    int k = 0;
    for (sieveDataType_t dtype : {sieveFloat32, sieveFloat16, sieveBfloat16}) {
      for (sieveRedOp_t op : {sieveSum, sieveAvg}) {
        TernaryCase c;
        c.input_seed = ++seed;
        c.nranks = n;
        c.dtype = dtype;
        c.op = op;
        c.count = count;
        c.block = k % 2 == 0 ? 2048 : 61;
        c.seed = seed * 3;
        c.step = seed;
        c.kept = &kept;
        const bool in_place = ++k % 2 == 0;
        size_t esize = dtype == sieveFloat32 ? 4 : 2;
        // 64-byte aligned, as PyTorch's tensors (the scatter streams only then).
        std::vector<char> buf(count * esize + 64), out(count * esize + 64, 0x5a);
        char* bufp = Align64(buf.data());
        FillTernaryInput(c.input_seed, rank, dtype, count, bufp);
        void* send = bufp;
        void* recv = in_place ? bufp : Align64(out.data());
        sieveTernaryParams_t params{c.seed, c.step, c.block, mask, 0};
        RANK_CHECK(sieveAllReduceTernary(send, recv, count, dtype, op, &params, comm, nullptr) ==
                   sieveSuccess, "%s", sieveGetLastError(comm));
        std::vector<char> expected = ExpectedTernary(c);
        if (std::memcmp(recv, expected.data(), expected.size()) != 0) {
          std::fprintf(stderr, "rank %d: density %g dtype %d op %d %s differs\n", rank, density,
                       int(dtype), int(op), in_place ? "in place" : "out of place");
          ++bad;
        }
      }
    }
    RANK_CHECK(sieveMaskDeregister(mask) == sieveSuccess, "deregister");
  }
  RANK_CHECK(sieveCommDestroy(comm) == sieveSuccess, "destroy");
  RANK_CHECK(bad == 0, "%ld masked ternary cases wrong", bad);
  return 0;
}

class MaskedTernarySweepTest
    : public ::testing::TestWithParam<std::tuple<const char*, int>> {};

TEST_P(MaskedTernarySweepTest, EveryDensityTypeOpAndPlacementMatchesReference) {
  RankSpec spec;
  spec.nranks = std::get<1>(GetParam());
  spec.env = {{"SIEVE_ALGO", std::get<0>(GetParam())}, {"SIEVE_SEGMENT_BYTES", "1k"}};
  EXPECT_EQ(RunRanks(spec, RunMaskedTernarySweep), "");
}

INSTANTIATE_TEST_SUITE_P(Algos, MaskedTernarySweepTest,
                         ::testing::Combine(::testing::Values("ring", "tree", "direct", "oneshot",
                                                              "oneshot_values"),
                                            ::testing::Values(2, 3, 4)));

// Every result written with streaming stores (SIEVE_STREAM_BYTES=1; the default
// streams only results of 16 MiB and up): the same bits, dense and masked.
TEST(TernaryStreamingStoresTest, EveryResultStreamedMatchesReference) {
  for (const char* algo : {"ring", "oneshot"}) {
    RankSpec spec;
    spec.nranks = 3;
    spec.env = {{"SIEVE_ALGO", algo}, {"SIEVE_SEGMENT_BYTES", "4k"}, {"SIEVE_STREAM_BYTES", "1"}};
    EXPECT_EQ(RunRanks(spec, RunExactness), "") << algo;
    EXPECT_EQ(RunRanks(spec, RunMaskedTernarySweep), "") << algo;
  }
}

}  // namespace
}  // namespace sieve_test

namespace sieve_test {
namespace {

// Error feedback: the same gradient every step. With feedback the sum of the
// applied (all-reduced, averaged) updates over T steps differs from T times the
// true average by the last residuals only (e = g' - s*q, |e| <= s): the error
// stops growing with T. Without it the rounding errors add up like a random
// walk (about sqrt(T)). Returns the mean accumulated error per element.
// Residuals are kept per buffer: each run passes its own `g` so it starts at zero.
double AccumulatedError(int rank, int n, sieveComm_t comm, int feedback, int steps,
                        std::vector<float>& g) {
  const size_t count = g.size();
  std::vector<float> out(count);
  std::vector<double> applied(count, 0.0), truth(count, 0.0);
  for (int r = 0; r < n; ++r) {
    FillTernaryInput(77, r, sieveFloat32, count, g.data());
    for (size_t j = 0; j < count; ++j) truth[j] += static_cast<double>(g[j]) / n * steps;
  }
  FillTernaryInput(77, rank, sieveFloat32, count, g.data());
  for (int t = 0; t < steps; ++t) {
    sieveTernaryParams_t params = {5, static_cast<uint64_t>(t), 256, nullptr, feedback};
    if (sieveAllReduceTernary(g.data(), out.data(), count, sieveFloat32, sieveAvg, &params, comm,
                              nullptr) != sieveSuccess)
      return -1;
    for (size_t j = 0; j < count; ++j) applied[j] += out[j];
  }
  double mean = 0;
  for (size_t j = 0; j < count; ++j) mean += std::fabs(applied[j] - truth[j]) / count;
  return mean;
}

int RunErrorFeedback(int rank, int n, const sieveUniqueId& id) {
  sieveComm_t comm = nullptr;
  RANK_CHECK(sieveCommInitRank(&comm, n, id, rank) == sieveSuccess, "%s",
             sieveGetLastError(nullptr));
  double err[2][2];  // [feedback][100 steps, 400 steps]
  const int kSteps[2] = {100, 400};
  std::vector<std::vector<float>> buffers(4, std::vector<float>(4099));  // distinct addresses
  for (int fb = 0; fb < 2; ++fb) {
    for (int len = 0; len < 2; ++len) {
      err[fb][len] = AccumulatedError(rank, n, comm, fb, kSteps[len], buffers[2 * fb + len]);
      RANK_CHECK(err[fb][len] >= 0, "%s", sieveGetLastError(comm));
    }
  }
  RANK_CHECK(sieveCommDestroy(comm) == sieveSuccess, "destroy");
  std::fprintf(stderr, "rank %d: mean accumulated error after 100/400 steps: %.2f/%.2f with "
               "feedback, %.2f/%.2f without\n", rank, err[1][0], err[1][1], err[0][0], err[0][1]);
  RANK_CHECK(err[1][1] < 1.5 * err[1][0], "with feedback the error still grows: %g -> %g",
             err[1][0], err[1][1]);
  RANK_CHECK(err[0][1] > 1.5 * err[0][0], "without feedback the error should grow: %g -> %g",
             err[0][0], err[0][1]);
  RANK_CHECK(err[1][1] < err[0][1], "feedback does not help: %g vs %g", err[1][1], err[0][1]);
  return 0;
}

TEST(TernaryErrorFeedbackTest, AppliedUpdatesTrackTheTrueGradient) {
  RankSpec spec;
  spec.nranks = 3;
  EXPECT_EQ(RunRanks(spec, RunErrorFeedback), "");
}

}  // namespace
}  // namespace sieve_test

namespace sieve_test {
namespace {

// Error feedback, bit for bit: three steps on the same input (fresh residuals),
// each result equal to the oracle's, which keeps e = g + e - s * q per rank.
int RunFeedbackExact(int rank, int n, const sieveUniqueId& id) {
  sieveComm_t comm = Init(rank, n, id);
  RANK_CHECK(comm != nullptr, "%s", sieveGetLastError(nullptr));
  long bad = 0;
  int k = 0;
  std::vector<std::vector<char>> buffers;  // residuals are per buffer: one each, kept alive
  for (bool masked : {false, true})
    for (sieveDataType_t dtype : kTypes) {
      std::vector<bool> kept;
      TernaryCase c;
      c.input_seed = 300 + k;
      c.nranks = n;
      c.dtype = dtype;
      c.op = k % 2 == 0 ? sieveAvg : sieveSum;
      c.count = 20011;
      c.block = k % 3 == 0 ? 2048 : 97;
      c.seed = 0xfeed + k;
      c.step = 50 + k;
      ++k;
      sieveMask_t mask = masked ? RegisterSomeMask(comm, c.count, &kept) : nullptr;
      RANK_CHECK(!masked || mask != nullptr, "%s", sieveGetLastError(comm));
      if (masked) c.kept = &kept;
      const int kSteps = 3;
      std::vector<std::vector<char>> expected = ExpectedTernaryFeedback(c, kSteps);
      std::vector<char> in = TernaryCaseInput(c, rank), out(in.size());
      for (int t = 0; t < kSteps; ++t) {
        sieveTernaryParams_t params =
            TernaryParams(c.seed, c.step + static_cast<uint64_t>(t), c.block, mask, 1);
        RANK_CHECK(sieveAllReduceTernary(in.data(), out.data(), c.count, c.dtype, c.op, &params,
                                         comm, nullptr) == sieveSuccess,
                   "%s", sieveGetLastError(comm));
        const long wrong = CountDifferent(c.dtype, out.data(), expected[t].data(), c.count);
        if (wrong != 0)
          std::fprintf(stderr, "rank %d: feedback step %d dtype %d masked %d: %ld wrong\n", rank,
                       t, int(c.dtype), int(masked), wrong);
        bad += wrong;
      }
      if (mask != nullptr) RANK_CHECK(sieveMaskDeregister(mask) == sieveSuccess, "deregister");
      buffers.push_back(std::move(in));
    }
  RANK_CHECK(sieveCommDestroy(comm) == sieveSuccess, "destroy");
  RANK_CHECK(bad == 0, "%ld elements differ from the feedback reference", bad);
  return 0;
}

// Error feedback is each rank's own choice: the last rank without it, the others with
// it, every algorithm's result the reference's (the one-shot of values carries each
// rank's abs-maxes whether or not it keeps a residual).
int RunMixedFeedback(int rank, int n, const sieveUniqueId& id) {
  sieveComm_t comm = Init(rank, n, id);
  RANK_CHECK(comm != nullptr, "%s", sieveGetLastError(nullptr));
  TernaryCase c;
  c.input_seed = 404;
  c.nranks = n;
  c.count = 5003;
  c.block = 211;
  c.seed = 0xabc;
  c.step = 9;
  const int kSteps = 3;
  std::vector<std::vector<char>> expected = ExpectedTernaryFeedback(c, kSteps, n - 1);
  std::vector<char> in = TernaryCaseInput(c, rank), out(in.size());
  long bad = 0;
  for (int t = 0; t < kSteps; ++t) {
    sieveTernaryParams_t params = TernaryParams(c.seed, c.step + static_cast<uint64_t>(t), c.block,
                                                nullptr, rank == n - 1 ? 0 : 1);
    RANK_CHECK(sieveAllReduceTernary(in.data(), out.data(), c.count, c.dtype, c.op, &params, comm,
                                     nullptr) == sieveSuccess,
               "step %d: %s", t, sieveGetLastError(comm));
    bad += CountDifferent(c.dtype, out.data(), expected[t].data(), c.count);
  }
  RANK_CHECK(sieveCommDestroy(comm) == sieveSuccess, "destroy");
  RANK_CHECK(bad == 0, "%ld elements differ from the mixed-feedback reference", bad);
  return 0;
}

TEST(TernaryMixedFeedbackTest, EachRankChoosesFeedbackForItself) {
  for (const char* algo : {"ring", "oneshot_values"}) {
    RankSpec spec;
    spec.nranks = 3;
    spec.env = {{"SIEVE_ALGO", algo}};
    EXPECT_EQ(RunRanks(spec, RunMixedFeedback), "") << algo;
  }
}

class TernaryFeedbackExactTest : public ::testing::TestWithParam<std::tuple<const char*, int>> {};

TEST_P(TernaryFeedbackExactTest, EveryStepMatchesTheReference) {
  RankSpec spec;
  spec.nranks = std::get<1>(GetParam());
  spec.env = {{"SIEVE_ALGO", std::get<0>(GetParam())}, {"SIEVE_SEGMENT_BYTES", "4k"}};
  EXPECT_EQ(RunRanks(spec, RunFeedbackExact), "");
}

INSTANTIATE_TEST_SUITE_P(Algos, TernaryFeedbackExactTest,
                         ::testing::Combine(::testing::Values("ring", "tree", "oneshot_values"),
                                            ::testing::Values(2, 3)));

// Non-finite input (sieve.h): a NaN or an infinity on any one rank makes every
// element of its block NaN on every rank, whatever the rank that held it; the
// other blocks are exact. With error feedback the block's residuals are NaN,
// so the next call (with finite input) still gives NaN there.
int RunNonFinite(int rank, int n, const sieveUniqueId& id) {
  sieveComm_t comm = Init(rank, n, id);
  RANK_CHECK(comm != nullptr, "%s", sieveGetLastError(nullptr));
  const float kBad[3] = {std::numeric_limits<float>::quiet_NaN(),
                         std::numeric_limits<float>::infinity(),
                         -std::numeric_limits<float>::infinity()};
  long bad = 0;
  int k = 0;
  // Residuals are per buffer: every case keeps its own, alive to the end.
  std::vector<std::vector<char>> buffers;
  for (bool masked : {false, true})
    for (sieveDataType_t dtype : kTypes)
      for (float value : kBad) {
        std::vector<bool> kept;
        TernaryCase c;
        c.input_seed = 700 + k;
        c.nranks = n;
        c.dtype = dtype;
        c.op = k % 2 == 0 ? sieveSum : sieveAvg;
        c.count = 5003;
        c.block = 256;
        c.seed = 31 + k;
        c.step = 9;
        c.poison_rank = k % n;
        c.poison_index = 1000 + 7 * static_cast<size_t>(k);  // a kept element (j % 3 != 1 ...)
        c.poison_value = value;
        ++k;
        sieveMask_t mask = masked ? RegisterSomeMask(comm, c.count, &kept) : nullptr;
        RANK_CHECK(!masked || mask != nullptr, "%s", sieveGetLastError(comm));
        if (masked) {
          c.kept = &kept;
          while (!kept[c.poison_index]) ++c.poison_index;
        }
        std::vector<char> in = TernaryCaseInput(c, rank), out(in.size());
        sieveTernaryParams_t params = TernaryParams(c.seed, c.step, c.block, mask, 1);
        RANK_CHECK(sieveAllReduceTernary(in.data(), out.data(), c.count, c.dtype, c.op, &params,
                                         comm, nullptr) == sieveSuccess,
                   "%s", sieveGetLastError(comm));
        std::vector<char> expected = ExpectedTernary(c);
        bad += CountDifferent(c.dtype, out.data(), expected.data(), c.count);
        // The poisoned element's whole block is NaN (packed position / block).
        size_t pos = c.poison_index;
        if (masked) pos = static_cast<size_t>(std::count(kept.begin(), kept.begin() + pos, true));
        size_t nan_count = 0, block_elems = 0;
        for (size_t j = 0, p = 0; j < c.count; ++j) {
          if (masked && !kept[j]) continue;
          if (p / c.block == pos / c.block) {
            ++block_elems;
            nan_count += std::isnan(LoadWidened(c.dtype, out.data(), j));
          }
          ++p;
        }
        if (nan_count != block_elems)
          std::fprintf(stderr, "rank %d: dtype %d masked %d: %zu of %zu NaN in the block\n", rank,
                       int(dtype), int(masked), nan_count, block_elems);
        bad += static_cast<long>(block_elems - nan_count);
        // Next step, finite input on every rank in the same buffer (residuals are
        // per buffer): the residuals keep the block NaN.
        FillTernaryInput(c.input_seed, rank, c.dtype, c.count, in.data());
        params.step = c.step + 1;
        RANK_CHECK(sieveAllReduceTernary(in.data(), out.data(), c.count, c.dtype, c.op,
                                         &params, comm, nullptr) == sieveSuccess,
                   "%s", sieveGetLastError(comm));
        size_t still = 0;
        for (size_t j = 0, p = 0; j < c.count; ++j) {
          if (masked && !kept[j]) continue;
          if (p++ / c.block == pos / c.block) still += std::isnan(LoadWidened(c.dtype, out.data(), j));
        }
        if (still != block_elems) {
          std::fprintf(stderr, "rank %d: the next step has %zu of %zu NaN\n", rank, still,
                       block_elems);
          ++bad;
        }
        if (mask != nullptr) RANK_CHECK(sieveMaskDeregister(mask) == sieveSuccess, "deregister");
        buffers.push_back(std::move(in));
      }
  RANK_CHECK(sieveCommDestroy(comm) == sieveSuccess, "destroy");
  RANK_CHECK(bad == 0, "%ld wrong elements with non-finite input", bad);
  return 0;
}

class TernaryNonFiniteTest : public ::testing::TestWithParam<std::tuple<const char*, int>> {};

TEST_P(TernaryNonFiniteTest, PoisonsItsBlockOnEveryRank) {
  RankSpec spec;
  spec.nranks = std::get<1>(GetParam());
  spec.env = {{"SIEVE_ALGO", std::get<0>(GetParam())}, {"SIEVE_SEGMENT_BYTES", "4k"}};
  EXPECT_EQ(RunRanks(spec, RunNonFinite), "");
}

INSTANTIATE_TEST_SUITE_P(Algos, TernaryNonFiniteTest,
                         ::testing::Combine(::testing::Values("ring", "tree", "oneshot_values"),
                                            ::testing::Values(3)));

}  // namespace
}  // namespace sieve_test
