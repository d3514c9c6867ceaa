// The top-k all-reduce (sieveAllReduceTopK) with ranks as threads over the
// loopback transport: bit for bit against a single-process reference written
// independently of src/topk/ (a full sort per rank, not a selection), for
// float32/float16/bfloat16 x n in {2, 3, 4} x odd counts x sum/avg, with and
// without error feedback; the bytes on the wire against the formula; bad
// arguments; and a count that differs on one rank failing on every rank.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "kernels/dtype.h"
#include "support/fake_device.h"
#include "support/mp_harness.h"
#include "support/thread_ranks.h"
#include "support/topk_reference.h"

namespace sieve_test {
namespace {

// Rank r's input of one case: normal values with some exact ties and zeros.
std::vector<uint8_t> Input(uint64_t seed, int rank, sieveDataType_t t, size_t count) {
  std::mt19937_64 rng(seed * 1000003 + static_cast<uint64_t>(rank));
  std::normal_distribution<float> normal(0.0f, 3.0f);
  std::vector<uint8_t> out(count * TopKElemSize(t) + 1);
  for (size_t i = 0; i < count; ++i) {
    float v = normal(rng);
    if (rng() % 7 == 0) v = (rng() % 2 ? 1.0f : -1.0f) * 2.0f;  // ties in magnitude
    if (rng() % 11 == 0) v = 0.0f;
    TopKStore(t, v, &out[i * TopKElemSize(t)]);
  }
  return out;
}

RankSpec Spec(int n) {
  RankSpec spec;
  spec.nranks = n;
  spec.kill_after_s = 60;
  spec.env = {{"SIEVE_TIMEOUT", "20"}, {"SIEVE_SEGMENT_BYTES", "4k"}};
  return spec;
}

const char* TName(sieveDataType_t t) {
  return t == sieveFloat32 ? "float32" : t == sieveFloat16 ? "float16" : "bfloat16";
}

int RunSweep(int rank, int n, const sieveUniqueId& id) {
  sieveComm_t comm = nullptr;
  RANK_CHECK(InitComm(rank, n, id, &comm) == 0, "%s", sieveGetLastError(nullptr));
  int bad = 0;
  uint64_t seed = 40 + static_cast<uint64_t>(n);
  for (sieveDataType_t t : {sieveFloat32, sieveFloat16, sieveBfloat16})
    for (sieveRedOp_t op : {sieveSum, sieveAvg})
      for (size_t count : {size_t{0}, size_t{1}, size_t{7}, size_t{1001}, size_t{4099}})
        for (double fraction : {0.001, 0.25, 1.0}) {
          ++seed;
          if (count == 4099 && fraction == 1.0 && t != sieveFloat32) continue;
          std::vector<std::vector<uint8_t>> inputs;
          for (int r = 0; r < n; ++r) inputs.push_back(Input(seed, r, t, count));
          std::vector<std::vector<float>> no_residuals;
          const std::vector<uint8_t> want = ExpectedTopK(inputs, t, op, count, fraction, &no_residuals);
          const bool in_place = seed % 3 == 0;
          std::vector<uint8_t> recv(want.size(), 0x5a), send = inputs[rank];
          if (in_place) recv = send;
          sieveCounters_t before, after;
          RANK_CHECK(sieveCommGetCounters(comm, &before) == sieveSuccess, "counters");
          if (sieveAllReduceTopK(in_place ? recv.data() : send.data(), recv.data(), count, t, op,
                                 fraction, 0, comm, nullptr) != sieveSuccess) {
            std::fprintf(stderr, "rank %d: %s: %s\n", rank, TName(t), sieveGetLastError(comm));
            ++bad;
            continue;
          }
          RANK_CHECK(sieveCommGetCounters(comm, &after) == sieveSuccess, "counters");
          const uint64_t wire = static_cast<uint64_t>(n - 1) * TopKKept(count, fraction) *
                                (4 + TopKElemSize(t));
          if (after.bytes_sent - before.bytes_sent != wire && bad++ < 5)
            std::fprintf(stderr, "rank %d: count %zu k %zu: sent %llu bytes, formula %llu\n", rank,
                         count, TopKKept(count, fraction),
                         static_cast<unsigned long long>(after.bytes_sent - before.bytes_sent),
                         static_cast<unsigned long long>(wire));
          if (std::memcmp(recv.data(), want.data(), count * TopKElemSize(t)) != 0 && bad++ < 5)
            std::fprintf(stderr, "rank %d: %s %s count %zu fraction %g%s: differs from the reference\n",
                         rank, TName(t), op == sieveSum ? "sum" : "avg", count, fraction,
                         in_place ? " in place" : "");
        }
  RANK_CHECK(sieveCommDestroy(comm) == sieveSuccess, "destroy");
  RANK_CHECK(bad == 0, "%d cases wrong", bad);
  return 0;
}

class LoopbackTopkTest : public ::testing::TestWithParam<int> {};

TEST_P(LoopbackTopkTest, EveryTypeOpAndOddCountMatchesTheReferenceAndTheWireFormula) {
  EXPECT_EQ(RunThreadRanks(Spec(GetParam()), RunSweep), "");
}

INSTANTIATE_TEST_SUITE_P(Ranks, LoopbackTopkTest, ::testing::Values(2, 3, 4));

// Error feedback: three steps on one buffer, each against the reference with
// every rank's residual carried over.
int RunFeedback(int rank, int n, const sieveUniqueId& id) {
  sieveComm_t comm = nullptr;
  RANK_CHECK(InitComm(rank, n, id, &comm) == 0, "%s", sieveGetLastError(nullptr));
  for (sieveDataType_t t : {sieveFloat32, sieveBfloat16}) {
    const size_t count = 333;
    std::vector<std::vector<float>> residuals(n, std::vector<float>(count, 0.0f));
    std::vector<uint8_t> send(count * TopKElemSize(t) + 1), recv(send.size());
    for (int step = 0; step < 3; ++step) {
      std::vector<std::vector<uint8_t>> inputs;
      for (int r = 0; r < n; ++r) inputs.push_back(Input(70 + step, r, t, count));
      const std::vector<uint8_t> want = ExpectedTopK(inputs, t, sieveAvg, count, 0.05, &residuals);
      send = inputs[rank];  // the same buffer every step: its residual carries over
      RANK_CHECK(sieveAllReduceTopK(send.data(), recv.data(), count, t, sieveAvg, 0.05, 1, comm,
                                    nullptr) == sieveSuccess, "%s", sieveGetLastError(comm));
      RANK_CHECK(std::memcmp(recv.data(), want.data(), count * TopKElemSize(t)) == 0,
                 "%s step %d differs from the reference", TName(t), step);
    }
  }
  RANK_CHECK(sieveCommDestroy(comm) == sieveSuccess, "destroy");
  return 0;
}

TEST(LoopbackTopkTest, ErrorFeedbackCarriesEachRanksResidualAcrossSteps) {
  EXPECT_EQ(RunThreadRanks(Spec(3), RunFeedback), "");
}

// "" when `r` failed with sieveInvalidArgument and a message containing `words`.
std::string Refused(sieveComm_t comm, sieveResult_t r, const char* words) {
  if (r != sieveInvalidArgument) return std::string("not refused: ") + std::to_string(r);
  const std::string msg = sieveGetLastError(comm);
  return msg.find(words) == std::string::npos ? "message: " + msg : "";
}

int RunBadArguments(int rank, int n, const sieveUniqueId& id) {
  sieveComm_t comm = nullptr;
  RANK_CHECK(InitComm(rank, n, id, &comm) == 0, "%s", sieveGetLastError(nullptr));
  float in[5] = {1, 2, 3, 4, 5}, out[5];
  int32_t ints[5] = {};
  std::string e;
  for (double f : {0.0, -0.5, 1.5, std::nan("")}) {
    e = Refused(comm, sieveAllReduceTopK(in, out, 5, sieveFloat32, sieveSum, f, 0, comm, nullptr),
                "fraction");
    RANK_CHECK(e.empty(), "fraction %g: %s", f, e.c_str());
  }
  e = Refused(comm, sieveAllReduceTopK(ints, ints, 5, sieveInt32, sieveSum, 0.5, 0, comm, nullptr),
              "datatype int32 is not supported by the top-k all-reduce");
  RANK_CHECK(e.empty(), "int32: %s", e.c_str());
  e = Refused(comm, sieveAllReduceTopK(in, out, 5, sieveFloat32, sieveMax, 0.5, 0, comm, nullptr),
              "op max is not supported by the top-k all-reduce");
  RANK_CHECK(e.empty(), "max: %s", e.c_str());
  e = Refused(comm, sieveAllReduceTopK(in, out, 5, sieveFloat32, sieveSum, 0.5, 2, comm, nullptr),
              "error_feedback 2");
  RANK_CHECK(e.empty(), "feedback: %s", e.c_str());
  e = Refused(comm, sieveAllReduceTopK(nullptr, out, 5, sieveFloat32, sieveSum, 0.5, 0, comm,
                                       nullptr), "sendbuff");
  RANK_CHECK(e.empty(), "null sendbuff: %s", e.c_str());
  e = Refused(comm, sieveAllReduceTopK(in, in + 1, 4, sieveFloat32, sieveSum, 0.5, 0, comm,
                                       nullptr), "overlap");
  RANK_CHECK(e.empty(), "overlap: %s", e.c_str());
  // Refused calls take no sequence number: the next call still agrees.
  RANK_CHECK(sieveAllReduceTopK(in, out, 5, sieveFloat32, sieveSum, 0.2, 0, comm, nullptr) ==
                 sieveSuccess, "%s", sieveGetLastError(comm));
  RANK_CHECK(out[4] == 5.0f * n && out[0] == 0.0f, "after refusals: %g %g", out[4], out[0]);
  RANK_CHECK(sieveCommDestroy(comm) == sieveSuccess, "destroy");
  return 0;
}

TEST(LoopbackTopkTest, BadArgumentsAreRefusedByName) {
  EXPECT_EQ(RunThreadRanks(Spec(2), RunBadArguments), "");
}

// Device buffers (here a fake device's arena) are refused on every rank, by name.
std::vector<float>* g_device_arena = nullptr;

int RunDeviceBuffers(int rank, int n, const sieveUniqueId& id) {
  sieveComm_t comm = nullptr;
  RANK_CHECK(InitComm(rank, n, id, &comm) == 0, "%s", sieveGetLastError(nullptr));
  float* dev = g_device_arena->data() + 16 * rank;
  const sieveResult_t r =
      sieveAllReduceTopK(dev, dev, 16, sieveFloat32, sieveSum, 0.5, 0, comm, nullptr);
  const std::string msg = sieveGetLastError(comm);
  RANK_CHECK(r == sieveInvalidUsage, "device buffers: result %d (%s)", r, msg.c_str());
  RANK_CHECK(msg.find("sieveAllReduceTopK does not take device buffers") != std::string::npos,
             "message: %s", msg.c_str());
  RANK_CHECK(sieveCommDestroy(comm) == sieveSuccess, "destroy");
  return 0;
}

TEST(LoopbackTopkTest, DeviceBuffersAreRefused) {
  ScopedFakeRuntime fake;
  std::vector<float> arena(64);
  fake.classifier.AddArena(arena.data(), arena.size() * sizeof(float));
  g_device_arena = &arena;
  EXPECT_EQ(RunThreadRanks(Spec(2), RunDeviceBuffers), "");
  g_device_arena = nullptr;
}

// Rank 2 passes one element more: k and the pairs' bytes may even agree, the
// count does not; every rank fails and names it.
int RunCountMismatch(int rank, int n, const sieveUniqueId& id) {
  sieveComm_t comm = nullptr;
  RANK_CHECK(InitComm(rank, n, id, &comm) == 0, "%s", sieveGetLastError(nullptr));
  std::vector<float> in(101, 1.0f), out(101);
  const size_t count = rank == 2 ? 101 : 100;
  const sieveResult_t r =
      sieveAllReduceTopK(in.data(), out.data(), count, sieveFloat32, sieveSum, 0.1, 0, comm, nullptr);
  const std::string msg = sieveGetLastError(comm);
  RANK_CHECK(r != sieveSuccess, "a count mismatch succeeded");
  RANK_CHECK(msg.find("count") != std::string::npos, "message does not name the count: %s",
             msg.c_str());
  sieveCommDestroy(comm);
  return 0;
}

TEST(LoopbackTopkTest, ACountMismatchFailsOnEveryRank) {
  EXPECT_EQ(RunThreadRanks(Spec(3), RunCountMismatch), "");
}

}  // namespace
}  // namespace sieve_test
