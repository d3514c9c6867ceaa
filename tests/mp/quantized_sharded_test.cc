// The sharded-training collectives of issue 20 on real processes:
// sieveReduceScatterQuantized bit for bit against the one-process reference for
// L in {1, 3, 7, 127} x float32/float16/bfloat16 x sum/avg x masked/unmasked x
// n in {2, 3, 4} x odd counts (in place and not); its wire bytes equal the bit-growth formula and,
// at n = 4, at most 1/8 (L = 1) and 1/5 (L = 7) of the dense reduce-scatter's (counted, not timed);
// its argument errors. sieveAllGatherQuantized: every element within the bound include/sieve.h
// states, the same bytes on every rank, non-finite blocks, wire bytes, errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "kernels/ternary.h"
#include "support/mp_harness.h"
#include "support/ternary_reference.h"

namespace sieve_test {
namespace {

const sieveDataType_t kTypes[] = {sieveFloat32, sieveFloat16, sieveBfloat16};
const int kLevels[] = {1, 3, 7, 127};
const size_t kCounts[] = {1, 7, 333, 1001, 2049};  // per rank

// Every L x dtype x op x masked/unmasked, counts and blocks cycling through odd
// sizes, every other case in place (recvbuff = sendbuff + rank * recvcount):
// rank r's result is chunk r of the reference quantized all-reduce of the whole
// sendbuffs (under a mask over all of them: zeros where it drops).
int RunExactness(int rank, int n, const sieveUniqueId& id) {
  sieveComm_t comm = nullptr;
  RANK_CHECK(InitComm(rank, n, id, &comm) == 0, "%s", sieveGetLastError(nullptr));
  std::vector<std::vector<bool>> kept(5);
  std::vector<sieveMask_t> masks(5);
  for (int i = 0; i < 5; ++i) {
    masks[i] = RegisterSomeMask(comm, kCounts[i] * n, &kept[i]);
    RANK_CHECK(masks[i] != nullptr, "%s", sieveGetLastError(comm));
  }
  long bad = 0;
  int k = 0;
  for (int levels : kLevels)
    for (sieveDataType_t dtype : kTypes)
      for (sieveRedOp_t op : {sieveSum, sieveAvg})
        for (bool masked : {false, true}) {
          const size_t count = kCounts[k % 5];
          TernaryCase c;
          c.input_seed = 300 + k;
          c.nranks = n;
          c.dtype = dtype;
          c.op = op;
          c.count = count * static_cast<size_t>(n);
          c.block = k % 3 == 0 ? 2048 : (k % 3 == 1 ? 7 : 61);
          c.seed = 0x5ca77e0ull + k;
          c.step = 11 + k;
          c.levels = levels;
          if (masked) c.kept = &kept[k % 5];
          const bool in_place = k % 2 == 1;
          sieveTernaryParams_t params =
              TernaryParams(c.seed, c.step, c.block, masked ? masks[k % 5] : nullptr);
          ++k;
          const size_t es = TernaryElemSize(dtype), bytes = count * es;
          std::vector<char> send = TernaryCaseInput(c, rank), recv(bytes + 1, 0x5a);
          void* out = in_place ? send.data() + rank * bytes : recv.data();
          RANK_CHECK(sieveReduceScatterQuantized(send.data(), out, count, dtype, op, levels,
                                                 &params, comm, nullptr) == sieveSuccess,
                     "%s", sieveGetLastError(comm));
          const std::vector<char> expected = ExpectedTernary(c);
          long wrong =
              CountDifferent(dtype, static_cast<char*>(out), expected.data() + rank * bytes, count);
          if (!in_place && recv[bytes] != 0x5a) ++wrong;  // wrote past the end
          if (wrong != 0)
            std::fprintf(stderr,
                         "rank %d: L %d dtype %d op %d count %zu block %zu%s%s: %ld wrong\n", rank,
                         levels, int(dtype), int(op), count, c.block, in_place ? " in place" : "",
                         masked ? " masked" : "", wrong);
          bad += wrong != 0;
        }
  for (sieveMask_t m : masks) RANK_CHECK(sieveMaskDeregister(m) == sieveSuccess, "deregister");
  RANK_CHECK(sieveCommDestroy(comm) == sieveSuccess, "destroy");
  RANK_CHECK(bad == 0, "%ld cases wrong", bad);
  return 0;
}

class QuantizedReduceScatterExactTest : public ::testing::TestWithParam<int> {};

TEST_P(QuantizedReduceScatterExactTest, MatchesReferenceBitForBit) {
  RankSpec spec;
  spec.nranks = GetParam();
  // Small segments: the ring pipelines several segments of unaligned lengths.
  spec.env = {{"SIEVE_SEGMENT_BYTES", "1k"}};
  EXPECT_EQ(RunRanks(spec, RunExactness), "");
}

INSTANTIATE_TEST_SUITE_P(Ranks, QuantizedReduceScatterExactTest, ::testing::Values(2, 3, 4));

uint64_t SentBy(sieveComm_t comm, const std::function<sieveResult_t()>& call) {
  sieveCounters_t before, after;
  if (sieveCommGetCounters(comm, &before) != sieveSuccess || call() != sieveSuccess ||
      sieveCommGetCounters(comm, &after) != sieveSuccess)
    return 0;
  return after.bytes_sent - before.bytes_sent;
}

// The formula exactly for every L at two counts, and the ratios to the dense
// reduce-scatter of the same float32 buffers (the goal of issue 20 at n = 4).
int RunWire(int rank, int n, const sieveUniqueId& id) {
  sieveComm_t comm = nullptr;
  RANK_CHECK(InitComm(rank, n, id, &comm) == 0, "%s", sieveGetLastError(nullptr));
  for (size_t count : {size_t{25001}, size_t{1023}}) {
    std::vector<float> in(count * n), out(count);
    FillTernaryInput(3, rank, sieveFloat32, in.size(), in.data());
    const uint64_t dense = SentBy(comm, [&] {
      return sieveReduceScatter(in.data(), out.data(), count, sieveFloat32, sieveSum, comm,
                                nullptr);
    });
    RANK_CHECK(dense == 4 * count * static_cast<uint64_t>(n - 1), "dense sent %llu",
               static_cast<unsigned long long>(dense));
    for (int levels : kLevels) {
      sieveTernaryParams_t params = TernaryParams(1, 2);
      const uint64_t sent = SentBy(comm, [&] {
        return sieveReduceScatterQuantized(in.data(), out.data(), count, sieveFloat32, sieveAvg,
                                           levels, &params, comm, nullptr);
      });
      const uint64_t want = ExpectedScatterBytes(count, 2048, n, levels);
      RANK_CHECK(sent == want, "L %d count %zu: sent %llu bytes, formula says %llu (%s)", levels,
                 count, static_cast<unsigned long long>(sent),
                 static_cast<unsigned long long>(want), sieveGetLastError(comm));
      if (rank == 0 && count == 25001)
        std::fprintf(stderr,
                     "n %d L %d: %llu bytes sent per rank for %zu float32 per rank, dense "
                     "reduce-scatter %llu: ratio 1/%.2f\n",
                     n, levels, static_cast<unsigned long long>(sent), count,
                     static_cast<unsigned long long>(dense), double(dense) / double(sent));
      if (n == 4 && count == 25001) {
        if (levels == 1)
          RANK_CHECK(8 * sent <= dense, "L 1: %llu bytes, above 1/8 of dense %llu",
                     static_cast<unsigned long long>(sent), static_cast<unsigned long long>(dense));
        if (levels == 7)
          RANK_CHECK(5 * sent <= dense, "L 7: %llu bytes, above 1/5 of dense %llu",
                     static_cast<unsigned long long>(sent), static_cast<unsigned long long>(dense));
      }
    }
  }
  RANK_CHECK(sieveCommDestroy(comm) == sieveSuccess, "destroy");
  return 0;
}

class QuantizedReduceScatterWireTest : public ::testing::TestWithParam<int> {};

TEST_P(QuantizedReduceScatterWireTest, BytesSentMatchBitGrowthFormula) {
  RankSpec spec;
  spec.nranks = GetParam();
  spec.env = {{"SIEVE_SEGMENT_BYTES", "64m"}};
  EXPECT_EQ(RunRanks(spec, RunWire), "");
}

INSTANTIATE_TEST_SUITE_P(Ranks, QuantizedReduceScatterWireTest, ::testing::Values(3, 4));

// Local argument errors fail on the calling rank before anything travels (every
// rank makes the same bad calls, so the communicator stays in step); a
// recvcount that differs across ranks fails on every rank, naming the count.
int RunErrors(int rank, int n, const sieveUniqueId& id) {
  sieveComm_t comm = nullptr;
  RANK_CHECK(InitComm(rank, n, id, &comm) == 0, "%s", sieveGetLastError(nullptr));
  std::vector<float> in(1000 * n, 0.5f), out(1000);
  sieveTernaryParams_t params = TernaryParams(1, 2);
  auto expect = [&](sieveResult_t got, const char* word, const char* what) {
    RANK_CHECK(got == sieveInvalidArgument, "%s: returned %d", what, int(got));
    RANK_CHECK(std::string(sieveGetLastError(comm)).find(word) != std::string::npos,
               "%s: %s does not name %s", what, sieveGetLastError(comm), word);
    return 0;
  };
  for (int bad : {0, -1, SIEVE_MAX_LEVELS + 1})
    if (expect(sieveReduceScatterQuantized(in.data(), out.data(), 1000, sieveFloat32, sieveSum, bad,
                                           &params, comm, nullptr),
               "levels", "bad levels") != 0)
      return 1;
  if (expect(sieveReduceScatterQuantized(in.data(), out.data(), 1000, sieveFloat32, sieveMax, 3,
                                         &params, comm, nullptr),
             "op", "op max") != 0 ||
      expect(sieveReduceScatterQuantized(in.data(), out.data(), 1000, sieveInt32, sieveSum, 3,
                                         &params, comm, nullptr),
             "datatype", "int32") != 0 ||
      expect(sieveReduceScatterQuantized(in.data(), out.data(), 1000, sieveFloat32, sieveSum, 3,
                                         nullptr, comm, nullptr),
             "params", "NULL params") != 0 ||
      // recvbuff inside sendbuff, not at this rank's block.
      expect(sieveReduceScatterQuantized(in.data(), in.data() + 1 + 1000 * rank, 999, sieveFloat32,
                                         sieveSum, 3, &params, comm, nullptr),
             "overlap", "overlap") != 0)
    return 1;
  // A mask must cover the whole sendbuff (recvcount * nranks), not recvbuff.
  std::vector<bool> kept;
  sieveMask_t recv_sized = RegisterSomeMask(comm, 1000, &kept);
  RANK_CHECK(recv_sized != nullptr, "%s", sieveGetLastError(comm));
  sieveTernaryParams_t masked = TernaryParams(1, 2, 0, recv_sized);
  if (expect(sieveReduceScatterQuantized(in.data(), out.data(), 1000, sieveFloat32, sieveSum, 3,
                                         &masked, comm, nullptr),
             "mask", "a mask of recvcount elements") != 0)
    return 1;
  RANK_CHECK(sieveMaskDeregister(recv_sized) == sieveSuccess, "deregister");
  // The communicator is still in step; a count of 0 (NULL buffers) takes part too.
  RANK_CHECK(sieveReduceScatterQuantized(in.data(), out.data(), 1000, sieveFloat32, sieveSum, 3,
                                         &params, comm, nullptr) == sieveSuccess,
             "%s", sieveGetLastError(comm));
  RANK_CHECK(sieveReduceScatterQuantized(nullptr, nullptr, 0, sieveFloat32, sieveAvg, 1, &params,
                                         comm, nullptr) == sieveSuccess,
             "count 0: %s", sieveGetLastError(comm));
  RANK_CHECK(
      sieveAllGatherQuantized(nullptr, nullptr, 0, sieveFloat32, 8, comm, nullptr) == sieveSuccess,
      "all-gather count 0: %s", sieveGetLastError(comm));
  // recvcount 999 on the last rank: every rank fails, naming the count.
  const size_t count = rank == n - 1 ? 999 : 1000;
  const sieveResult_t mismatch = sieveReduceScatterQuantized(
      in.data(), out.data(), count, sieveFloat32, sieveSum, 3, &params, comm, nullptr);
  const std::string msg = sieveGetLastError(comm);
  RANK_CHECK(mismatch == sieveInvalidUsage, "count mismatch returned %d: %s", int(mismatch),
             msg.c_str());
  RANK_CHECK(msg.find("count") != std::string::npos &&
                 msg.find("reducescatter-quantized") != std::string::npos,
             "%s", msg.c_str());
  RANK_CHECK(sieveCommAbort(comm) == sieveSuccess, "abort");
  return 0;
}

TEST(QuantizedReduceScatterErrorsTest, BadArgumentsAndCountMismatch) {
  RankSpec spec;
  spec.nranks = 3;
  spec.kill_after_s = 60;
  spec.env = {{"SIEVE_TIMEOUT", "10"}};
  EXPECT_EQ(RunRanks(spec, RunErrors), "");
}

// ---- sieveAllGatherQuantized ----------------------------------------------

uint64_t Fnv(const char* p, size_t bytes) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < bytes; ++i) h = (h ^ static_cast<unsigned char>(p[i])) * 1099511628211ull;
  return h;
}

// bits x dtype x odd counts, every other case in place: each element of every
// shard within the bound of what its owner sent (computed here from every
// rank's input), the largest error at least a quarter of the bound's s / 2 (it
// did quantize), and a hash of recvbuff equal on every rank. One case puts an
// infinity into rank 1's shard: its block is NaN everywhere, the others not.
int RunGather(int rank, int n, const sieveUniqueId& id) {
  sieveComm_t comm = nullptr;
  RANK_CHECK(InitComm(rank, n, id, &comm) == 0, "%s", sieveGetLastError(nullptr));
  const size_t counts[] = {1, 255, 257, 1001, 3001};
  int k = 0;
  for (int bits : {8, 4})
    for (sieveDataType_t dtype : kTypes)
      for (int variant = 0; variant < 2; ++variant) {
        const size_t count = counts[k % 5], es = TernaryElemSize(dtype);
        const bool in_place = variant == 1, poison = k == 3;
        std::vector<std::vector<char>> shards(n, std::vector<char>(count * es));
        for (int r = 0; r < n; ++r) FillTernaryInput(500 + k, r, dtype, count, shards[r].data());
        const size_t poisoned = count / 2;  // element of rank 1's shard
        if (poison && n > 1) {
          const float inf = std::numeric_limits<float>::infinity();
          if (dtype == sieveFloat32)
            std::memcpy(shards[1].data() + poisoned * 4, &inf, 4);
          else  // +inf in float16 and bfloat16
            std::memcpy(shards[1].data() + poisoned * 2,
                        dtype == sieveFloat16 ? "\x00\x7c" : "\x80\x7f", 2);
        }
        std::vector<char> recv(count * es * n + 1, 0x5a);
        if (in_place) std::memcpy(recv.data() + rank * count * es, shards[rank].data(), count * es);
        const void* send = in_place ? recv.data() + rank * count * es : shards[rank].data();
        RANK_CHECK(sieveAllGatherQuantized(send, recv.data(), count, dtype, bits, comm, nullptr) ==
                       sieveSuccess,
                   "%s", sieveGetLastError(comm));
        RANK_CHECK(recv[count * es * n] == 0x5a, "wrote past the end");
        double worst = 0;  // largest error / (s / 2) seen
        for (int r = 0; r < n; ++r)
          for (size_t b = 0; b * SIEVE_ALLGATHER_QUANT_BLOCK < count; ++b) {
            const size_t first = b * SIEVE_ALLGATHER_QUANT_BLOCK;
            const size_t last = std::min(count, first + SIEVE_ALLGATHER_QUANT_BLOCK);
            const bool nan_block = poison && r == 1 && first <= poisoned && poisoned < last;
            float m = 0;
            for (size_t j = first; j < last; ++j)
              m = std::max(m, std::fabs(LoadWidened(dtype, shards[r].data(), j)));
            for (size_t j = first; j < last; ++j) {
              const double x = LoadWidened(dtype, shards[r].data(), j);
              const double y = LoadWidened(dtype, recv.data(), r * count + j);
              if (nan_block) {
                RANK_CHECK(std::isnan(y), "bits %d: element %zu of a block with an infinity is %g",
                           bits, j, y);
                continue;
              }
              const double bound = QuantizedGatherBound(dtype, bits, m, x);
              RANK_CHECK(std::fabs(y - x) <= bound,
                         "bits %d dtype %d count %zu rank %d element %zu: sent %.9g, got %.9g, "
                         "error %.3g above the bound %.3g",
                         bits, int(dtype), count, r, j, x, y, std::fabs(y - x), bound);
              const double half = m / ((1 << (bits - 1)) - 1) / 2.0;
              if (half > 0) worst = std::max(worst, std::fabs(y - x) / half);
            }
          }
        if (count > 200)
          RANK_CHECK(worst > 0.25, "bits %d count %zu: largest error %.3f of s/2: not quantized?",
                     bits, count, worst);
        const uint64_t mine = Fnv(recv.data(), count * es * n);
        std::vector<uint64_t> all(n);
        RANK_CHECK(sieveAllGather(&mine, all.data(), 1, sieveUint64, comm, nullptr) == sieveSuccess,
                   "%s", sieveGetLastError(comm));
        for (int r = 0; r < n; ++r)
          RANK_CHECK(all[r] == mine, "bits %d dtype %d count %zu: rank %d holds other bytes", bits,
                     int(dtype), count, r);
        ++k;
      }
  RANK_CHECK(sieveCommDestroy(comm) == sieveSuccess, "destroy");
  return 0;
}

class QuantizedAllGatherTest : public ::testing::TestWithParam<int> {};

TEST_P(QuantizedAllGatherTest, WithinTheStatedBoundAndTheSameOnEveryRank) {
  RankSpec spec;
  spec.nranks = GetParam();
  spec.env = {{"SIEVE_SEGMENT_BYTES", "1k"}};
  EXPECT_EQ(RunRanks(spec, RunGather), "");
}

INSTANTIATE_TEST_SUITE_P(Ranks, QuantizedAllGatherTest, ::testing::Values(2, 3));

// Bytes: (n - 1) encoded shards, ceil(count / 256) scales and count * bits / 8
// bytes of codes each, against the dense all-gather's (n - 1) * 4 * count; then
// the argument errors, and a sendcount that differs across ranks.
int RunGatherWireAndErrors(int rank, int n, const sieveUniqueId& id) {
  sieveComm_t comm = nullptr;
  RANK_CHECK(InitComm(rank, n, id, &comm) == 0, "%s", sieveGetLastError(nullptr));
  const size_t count = 25001;
  std::vector<float> in(count), out(count * n);
  FillTernaryInput(8, rank, sieveFloat32, count, in.data());
  const uint64_t dense = SentBy(comm, [&] {
    return sieveAllGather(in.data(), out.data(), count, sieveFloat32, comm, nullptr);
  });
  for (int bits : {8, 4}) {
    const uint64_t sent = SentBy(comm, [&] {
      return sieveAllGatherQuantized(in.data(), out.data(), count, sieveFloat32, bits, comm,
                                     nullptr);
    });
    const uint64_t want = static_cast<uint64_t>(n - 1) *
                          ((count + 255) / 256 * 4 + (count * static_cast<size_t>(bits) + 7) / 8);
    RANK_CHECK(sent == want, "bits %d: sent %llu bytes, formula %llu (%s)", bits,
               static_cast<unsigned long long>(sent), static_cast<unsigned long long>(want),
               sieveGetLastError(comm));
    if (rank == 0)
      std::fprintf(stderr,
                   "n %d all-gather %d bits: %llu bytes per rank, dense %llu: ratio 1/%.2f\n", n,
                   bits, static_cast<unsigned long long>(sent),
                   static_cast<unsigned long long>(dense), double(dense) / double(sent));
  }
  for (int bits : {0, 2, 16})
    RANK_CHECK(sieveAllGatherQuantized(in.data(), out.data(), count, sieveFloat32, bits, comm,
                                       nullptr) == sieveInvalidArgument &&
                   std::string(sieveGetLastError(comm)).find("bits") != std::string::npos,
               "bits %d: %s", bits, sieveGetLastError(comm));
  RANK_CHECK(sieveAllGatherQuantized(in.data(), out.data(), count, sieveInt32, 8, comm, nullptr) ==
                     sieveInvalidArgument &&
                 std::string(sieveGetLastError(comm)).find("datatype") != std::string::npos,
             "int32: %s", sieveGetLastError(comm));
  // In the communicator's step still; then bits differ on the last rank.
  RANK_CHECK(sieveAllGatherQuantized(in.data(), out.data(), 100, sieveFloat32, 4, comm, nullptr) ==
                 sieveSuccess,
             "%s", sieveGetLastError(comm));
  const sieveResult_t mismatch = sieveAllGatherQuantized(in.data(), out.data(), 100, sieveFloat32,
                                                         rank == n - 1 ? 4 : 8, comm, nullptr);
  const std::string msg = sieveGetLastError(comm);
  RANK_CHECK(mismatch == sieveInvalidUsage && msg.find("bits") != std::string::npos &&
                 msg.find("allgather-quantized") != std::string::npos,
             "bits mismatch returned %d: %s", int(mismatch), msg.c_str());
  RANK_CHECK(sieveCommAbort(comm) == sieveSuccess, "abort");
  return 0;
}

TEST(QuantizedAllGatherWireTest, BytesMatchTheFormulaAndErrorsAreValues) {
  RankSpec spec;
  spec.nranks = 3;
  spec.kill_after_s = 60;
  spec.env = {{"SIEVE_TIMEOUT", "10"}};
  EXPECT_EQ(RunRanks(spec, RunGatherWireAndErrors), "");
}

}  // namespace
}  // namespace sieve_test
