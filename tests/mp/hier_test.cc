// The hierarchical all-reduce with hosts simulated by SIEVE_HOST_ID on one
// machine: 2 hosts x 2 ranks for every datatype x op against the reference,
// the bytes each rank sends (host reduce-scatter + inter-host slice + host
// all-gather, fewer than the flat ring), SIEVE_ALGO=FLAT, uneven hosts (flat),
// 3 hosts x 2 and 2 hosts x 3, masked, ternary (quantized once per host, exact
// against a reference built from the host sums) and masked + ternary; a call that
// differs on one rank (count, op, mask) fails on every rank.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "kernels/dtype.h"
#include "kernels/philox.h"
#include "support/mask_reference.h"
#include "support/mp_harness.h"
#include "support/reference.h"
#include "support/ternary_reference.h"

namespace sieve_test {
namespace {

using HostRankFn = std::function<int(int rank, int nranks, sieveComm_t comm)>;

// Runs `body` on `nranks` ranks laid out host by host (rank r on simulated
// host r / per_host), each with its communicator, destroyed after `body`
// passes. "" when every rank passed.
std::string RunOnHosts(int nranks, int per_host, const HostRankFn& body,
                       std::vector<std::pair<std::string, std::string>> env = {}) {
  RankSpec spec;
  spec.nranks = nranks;
  spec.env = std::move(env);
  return RunRanks(spec, [per_host, &body](int rank, int n, const sieveUniqueId& id) {
    std::string host = "topo-test-host-" + std::to_string(rank / per_host);
    setenv("SIEVE_HOST_ID", host.c_str(), 1);
    sieveComm_t comm = nullptr;
    RANK_CHECK(sieveCommInitRank(&comm, n, id, rank) == sieveSuccess, "%s",
               sieveGetLastError(nullptr));
    if (body(rank, n, comm) != 0) return 1;
    RANK_CHECK(sieveCommDestroy(comm) == sieveSuccess, "destroy");
    return 0;
  });
}

int RegisterMask(sieveComm_t comm, const std::vector<uint8_t>& mask, sieveMask_t* handle) {
  RANK_CHECK(sieveMaskRegister(comm, mask.data(), sieveMaskBytes, mask.size(), sieveMaskStrict,
                               handle) == sieveSuccess,
             "%s", sieveGetLastError(comm));
  return 0;
}

std::vector<size_t> Split(size_t count, int parts) {
  std::vector<size_t> b(parts + 1);
  for (int i = 0; i <= parts; ++i) b[i] = count * i / parts;
  return b;
}

// Dense all-reduce of every type and op at several sizes; returns 0 on success.
int CheckEveryTypeAndOp(int rank, int n, sieveComm_t comm, uint64_t seed_base) {
  const size_t sizes[] = {1, 2, 7, 1023, 100003};
  uint64_t seed = seed_base;
  for (sieveDataType_t t : kAllTypes)
    for (sieveRedOp_t op : kAllOps)
      for (size_t count : sizes)
        for (bool in_place : {false, true}) {
          ++seed;
          size_t es = TypeSize(t);
          std::vector<char> send(count * es), recv(count * es), expect(count * es);
          FillInput(seed, rank, t, op, 0, count, send.data());
          ExpectedReduction(seed, n, t, op, 0, count, expect.data());
          void* out = in_place ? send.data() : recv.data();
          RANK_CHECK(sieveAllReduce(send.data(), out, count, t, op, comm, nullptr) == sieveSuccess,
                     "%s", sieveGetLastError(comm));
          size_t first = 0;
          size_t bad = CountMismatches(out, expect.data(), count, es, &first);
          RANK_CHECK(bad == 0, "%s %s count %zu %s: %zu wrong, first at %zu", TypeName(t),
                     OpName(op), count, in_place ? "in place" : "", bad, first);
        }
  return 0;
}

TEST(HierAllReduce, TwoHostsTwoRanksEveryTypeAndOp) {
  std::string failures = RunOnHosts(4, 2, [](int rank, int n, sieveComm_t comm) {
    return CheckEveryTypeAndOp(rank, n, comm, 1000);
  });
  EXPECT_EQ(failures, "");
}

// Bytes rank `rank` sends in one all-reduce of `count` float32 on hosts x local
// ranks: its host ring sends every slice but its own (reduce-scatter) and
// every slice but its successor's (all-gather); the inter-host ring of its
// slice moves the slice 2(hosts-1)/hosts times.
uint64_t HierBytesSent(size_t count, int hosts, int local, int rank) {
  std::vector<size_t> slices = Split(count, local);
  auto len = [&](int i) { return slices[i + 1] - slices[i]; };
  int me = rank % local, host = rank / local;
  uint64_t intra = (count - len(me)) + (count - len((me + 1) % local));
  std::vector<size_t> sub = Split(len(me), hosts);
  auto sublen = [&](int h) { return sub[h + 1] - sub[h]; };
  uint64_t inter =
      hosts == 1 ? 0 : (len(me) - sublen(host)) + (len(me) - sublen((host + 1) % hosts));
  return (intra + inter) * 4;
}

uint64_t FlatBytesSent(size_t count, int n, int rank) {
  std::vector<size_t> c = Split(count, n);
  auto len = [&](int i) { return c[i + 1] - c[i]; };
  return ((count - len(rank)) + (count - len((rank + 1) % n))) * 4;
}

int SendAndCount(int rank, int n, sieveComm_t comm, size_t count, uint64_t* sent) {
  std::vector<float> data(count);
  FillInput(77, rank, sieveFloat32, sieveSum, 0, count, data.data());
  sieveCounters_t before{}, after{};
  RANK_CHECK(sieveCommGetCounters(comm, &before) == sieveSuccess, "counters");
  RANK_CHECK(sieveAllReduce(data.data(), data.data(), count, sieveFloat32, sieveSum, comm,
                            nullptr) == sieveSuccess,
             "%s", sieveGetLastError(comm));
  RANK_CHECK(sieveCommGetCounters(comm, &after) == sieveSuccess, "counters");
  std::vector<float> expect(count);
  ExpectedReduction(77, n, sieveFloat32, sieveSum, 0, count, expect.data());
  size_t first = 0;
  RANK_CHECK(CountMismatches(data.data(), expect.data(), count, 4, &first) == 0, "wrong at %zu",
             first);
  RANK_CHECK(after.collectives - before.collectives == 1, "one collective per call, got %llu",
             (unsigned long long)(after.collectives - before.collectives));
  *sent = after.bytes_sent - before.bytes_sent;
  return 0;
}

// The flat ring's bytes on ranks that do not form a hierarchy (or must not use it).
int CheckFlatBytes(int rank, int n, sieveComm_t comm, size_t count) {
  uint64_t sent = 0;
  if (SendAndCount(rank, n, comm, count, &sent) != 0) return 1;
  RANK_CHECK(sent == FlatBytesSent(count, n, rank), "sent %llu, flat ring %llu",
             (unsigned long long)sent, (unsigned long long)FlatBytesSent(count, n, rank));
  return 0;
}

TEST(HierAllReduce, BytesSentFollowTheHierarchy) {
  std::string failures = RunOnHosts(4, 2, [](int rank, int n, sieveComm_t comm) {
    const size_t count = 1000003;
    uint64_t sent = 0;
    if (SendAndCount(rank, n, comm, count, &sent) != 0) return 1;
    uint64_t expect = HierBytesSent(count, 2, 2, rank);
    RANK_CHECK(sent == expect, "sent %llu, hierarchical formula %llu", (unsigned long long)sent,
               (unsigned long long)expect);
    return 0;
  });
  EXPECT_EQ(failures, "");
}

TEST(HierAllReduce, AlgoFlatForcesTheFlatRing) {
  auto flat = [](int rank, int n, sieveComm_t comm) {
    return CheckFlatBytes(rank, n, comm, 1000003);
  };
  EXPECT_EQ(RunOnHosts(4, 2, flat, {{"SIEVE_ALGO", "flat"}}), "");
}

// Two ranks on one host, one on another: not hierarchical, so the flat ring runs.
TEST(HierAllReduce, UnevenHostsRunFlat) {
  auto flat = [](int rank, int n, sieveComm_t comm) {
    return CheckFlatBytes(rank, n, comm, 300007);
  };
  EXPECT_EQ(RunOnHosts(3, 2, flat), "");
}

class HierShapes : public ::testing::TestWithParam<std::pair<int, int>> {};

// 3 hosts x 2 ranks and 2 hosts x 3 ranks: a few types and ops, and the bytes.
TEST_P(HierShapes, MatchesReferenceAndFormula) {
  auto [hosts, local] = GetParam();
  std::string failures = RunOnHosts(
      hosts * local, local, [hosts = hosts, local = local](int rank, int n, sieveComm_t comm) {
        uint64_t seed = 5000;
        for (sieveDataType_t t : {sieveFloat32, sieveInt32, sieveFloat16})
          for (sieveRedOp_t op : {sieveSum, sieveMax, sieveAvg})
            for (size_t count : {size_t{5}, size_t{65539}}) {
              size_t es = TypeSize(t);
              std::vector<char> data(count * es), expect(count * es);
              FillInput(++seed, rank, t, op, 0, count, data.data());
              ExpectedReduction(seed, n, t, op, 0, count, expect.data());
              RANK_CHECK(sieveAllReduce(data.data(), data.data(), count, t, op, comm, nullptr) ==
                             sieveSuccess,
                         "%s", sieveGetLastError(comm));
              size_t first = 0;
              RANK_CHECK(CountMismatches(data.data(), expect.data(), count, es, &first) == 0,
                         "%s %s count %zu wrong at %zu", TypeName(t), OpName(op), count, first);
            }
        uint64_t sent = 0;
        if (SendAndCount(rank, n, comm, 200003, &sent) != 0) return 1;
        uint64_t expect = HierBytesSent(200003, hosts, local, rank);
        RANK_CHECK(sent == expect, "sent %llu, formula %llu", (unsigned long long)sent,
                   (unsigned long long)expect);
        return 0;
      });
  EXPECT_EQ(failures, "");
}

INSTANTIATE_TEST_SUITE_P(Shapes, HierShapes,
                         ::testing::Values(std::make_pair(3, 2), std::make_pair(2, 3)));

TEST(HierAllReduce, MaskedEveryTypeAndOp) {
  std::string failures = RunOnHosts(4, 2, [](int rank, int n, sieveComm_t comm) {
    const size_t count = 40009;
    std::vector<uint8_t> mask = RandomMask(99, count, 0.5);
    sieveMask_t handle = nullptr;
    if (RegisterMask(comm, mask, &handle) != 0) return 1;
    uint64_t seed = 7000;
    for (sieveDataType_t t : kAllTypes)
      for (sieveRedOp_t op : kAllOps) {
        size_t es = TypeSize(t);
        std::vector<char> send(count * es), recv(count * es), expect(count * es);
        FillInput(++seed, rank, t, op, 0, count, send.data());
        ExpectedMasked(seed, n, t, op, mask, expect.data());
        RANK_CHECK(sieveAllReduceMasked(send.data(), recv.data(), count, t, op, handle, comm,
                                        nullptr) == sieveSuccess,
                   "%s", sieveGetLastError(comm));
        size_t first = 0;
        RANK_CHECK(CountMismatches(recv.data(), expect.data(), count, es, &first) == 0,
                   "masked %s %s wrong at %zu", TypeName(t), OpName(op), first);
      }
    RANK_CHECK(sieveMaskDeregister(handle) == sieveSuccess, "deregister");
    return 0;
  });
  EXPECT_EQ(failures, "");
}

// ---- Ternary: the host sums are quantized once, between hosts.

TEST(HierAllReduce, TernaryQuantizesHostSumsOnce) {
  std::string failures = RunOnHosts(4, 2, [](int rank, int n, sieveComm_t comm) {
    uint64_t step = 0;
    for (sieveDataType_t t : {sieveFloat32, sieveFloat16, sieveBfloat16})
      for (sieveRedOp_t op : {sieveSum, sieveAvg})
        for (size_t count : {size_t{3}, size_t{20011}}) {
          const size_t block = 256, es = TypeSize(t);
          ++step;
          std::vector<std::vector<char>> inputs(n, std::vector<char>(count * es));
          for (int r = 0; r < n; ++r) FillTernaryInput(step, r, t, count, inputs[r].data());
          std::vector<char> out(count * es);
          sieveTernaryParams_t p = {11, step, block, nullptr, 0};
          RANK_CHECK(sieveAllReduceTernary(inputs[rank].data(), out.data(), count, t, op, &p, comm,
                                           nullptr) == sieveSuccess,
                     "%s", sieveGetLastError(comm));
          std::vector<char> expect = ExpectedHierTernary(inputs, t, op, count, block, 11, step);
          size_t first = 0;
          size_t bad = CountMismatches(out.data(), expect.data(), count, es, &first);
          RANK_CHECK(bad == 0, "ternary %s %s count %zu: %zu wrong, first at %zu", TypeName(t),
                     OpName(op), count, bad, first);
        }
    return 0;
  });
  EXPECT_EQ(failures, "");
}

// sieveAllReduceQuantized at L levels takes the same hierarchical plan: host sums
// quantized once at L levels between hosts, result s * Q / L (or / nL).
TEST(HierAllReduce, LevelsQuantizeHostSumsOnce) {
  std::string failures = RunOnHosts(4, 2, [](int rank, int n, sieveComm_t comm) {
    uint64_t step = 100;
    for (int levels : {7, 127})
      for (sieveDataType_t t : {sieveFloat32, sieveBfloat16})
        for (sieveRedOp_t op : {sieveSum, sieveAvg}) {
          const size_t count = 20011, block = 256, es = TypeSize(t);
          ++step;
          std::vector<std::vector<char>> inputs(n, std::vector<char>(count * es));
          for (int r = 0; r < n; ++r) FillTernaryInput(step, r, t, count, inputs[r].data());
          std::vector<char> out(count * es);
          sieveTernaryParams_t p = {11, step, block, nullptr, 0};
          RANK_CHECK(sieveAllReduceQuantized(inputs[rank].data(), out.data(), count, t, op,
                                             levels, &p, comm, nullptr) == sieveSuccess,
                     "%s", sieveGetLastError(comm));
          std::vector<char> expect =
              ExpectedHierTernary(inputs, t, op, count, block, 11, step, levels);
          size_t first = 0;
          size_t bad = CountMismatches(out.data(), expect.data(), count, es, &first);
          RANK_CHECK(bad == 0, "L %d %s %s: %zu wrong, first at %zu", levels, TypeName(t),
                     OpName(op), bad, first);
        }
    return 0;
  });
  EXPECT_EQ(failures, "");
}

TEST(HierAllReduce, MaskedTernaryQuantizesPackedHostSums) {
  std::string failures = RunOnHosts(4, 2, [](int rank, int n, sieveComm_t comm) {
    const size_t count = 30011, block = 512;
    std::vector<uint8_t> mask = RandomMask(5, count, 0.5);
    sieveMask_t handle = nullptr;
    if (RegisterMask(comm, mask, &handle) != 0) return 1;
    std::vector<size_t> kept;
    for (size_t j = 0; j < count; ++j)
      if (mask[j]) kept.push_back(j);
    std::vector<std::vector<float>> inputs(n, std::vector<float>(count));
    std::vector<std::vector<char>> packed(n, std::vector<char>(kept.size() * 4));
    for (int r = 0; r < n; ++r) {
      FillTernaryInput(3, r, sieveFloat32, count, inputs[r].data());
      for (size_t k = 0; k < kept.size(); ++k)
        std::memcpy(packed[r].data() + 4 * k, &inputs[r][kept[k]], 4);
    }
    std::vector<float> out(count, 1.0f);
    sieveTernaryParams_t p = {21, 4, block, handle, 0};
    RANK_CHECK(sieveAllReduceTernary(inputs[rank].data(), out.data(), count, sieveFloat32, sieveAvg,
                                     &p, comm, nullptr) == sieveSuccess,
               "%s", sieveGetLastError(comm));
    std::vector<char> expect_packed =
        ExpectedHierTernary(packed, sieveFloat32, sieveAvg, kept.size(), block, 21, 4);
    std::vector<float> expect(count, 0.0f);
    for (size_t k = 0; k < kept.size(); ++k)
      std::memcpy(&expect[kept[k]], expect_packed.data() + 4 * k, 4);
    size_t first = 0;
    RANK_CHECK(CountMismatches(out.data(), expect.data(), count, 4, &first) == 0,
               "masked ternary wrong at %zu", first);
    RANK_CHECK(sieveMaskDeregister(handle) == sieveSuccess, "deregister");
    return 0;
  });
  EXPECT_EQ(failures, "");
}

// ---- Misuse: the host and cross steps each compare only their own view and slice, so
// the whole call is agreed on by every rank (before, each case below returned success
// on some ranks with a wrong sum, or hung until the timeout).

// Every rank's call must fail with sieveInvalidUsage and a message containing `want`.
int ExpectMismatch(sieveComm_t comm, sieveResult_t r, const char* want) {
  RANK_CHECK(r == sieveInvalidUsage, "mismatched call returned %d: %s", r,
             sieveGetLastError(comm));
  RANK_CHECK(std::strstr(sieveGetLastError(comm), want) != nullptr, "%s",
             sieveGetLastError(comm));
  return 0;
}

const std::vector<std::pair<std::string, std::string>> kMisuseEnv = {{"SIEVE_TIMEOUT", "10"}};

TEST(HierAllReduce, CountOrOpDiffersOnOneRankFailsOnEveryRank) {
  // Rank 3 (host 1) passes one element more: its host peer's slices differ.
  auto count_differs = [](int rank, int n, sieveComm_t comm) {
    const size_t count = 10007 + (rank == n - 1 ? 1 : 0);
    std::vector<float> buf(count, 1.0f);
    return ExpectMismatch(comm, sieveAllReduce(buf.data(), buf.data(), count, sieveFloat32,
                                               sieveSum, comm, nullptr), "count");
  };
  EXPECT_EQ(RunOnHosts(4, 2, count_differs, kMisuseEnv), "");
  // Rank 1 (host 0) asks for max: only its cross step (with rank 3) compared ops.
  auto op_differs = [](int rank, int, sieveComm_t comm) {
    std::vector<float> buf(10007, 1.0f);
    return ExpectMismatch(comm, sieveAllReduce(buf.data(), buf.data(), buf.size(), sieveFloat32,
                                               rank == 1 ? sieveMax : sieveSum, comm, nullptr),
                          "op");
  };
  EXPECT_EQ(RunOnHosts(4, 2, op_differs, kMisuseEnv), "");
}

// Rank 3's mask keeps as many elements as the others' but not the same ones: the packed
// hierarchical all-reduce (dense on the kept elements) would add misaligned elements.
TEST(HierAllReduce, SameNnzDifferentMaskFailsOnEveryRank) {
  for (bool ternary : {false, true}) {
    auto body = [ternary](int rank, int n, sieveComm_t comm) {
      const size_t count = 20011;
      // Every rank registers both (registration itself compares masks); rank 3 passes b.
      std::vector<uint8_t> a = RandomMask(8, count, 0.5), b = a;
      std::rotate(b.begin(), b.begin() + 1, b.end());
      sieveMask_t ha = nullptr, hb = nullptr;
      if (RegisterMask(comm, a, &ha) != 0 || RegisterMask(comm, b, &hb) != 0) return 1;
      const sieveMask_t handle = rank == n - 1 ? hb : ha;
      std::vector<float> buf(count, 1.0f);
      const sieveTernaryParams_t p = {1, 2, 0, handle, 0};
      sieveResult_t r = ternary ? sieveAllReduceTernary(buf.data(), buf.data(), count,
                                                        sieveFloat32, sieveSum, &p, comm, nullptr)
                                : sieveAllReduceMasked(buf.data(), buf.data(), count,
                                                       sieveFloat32, sieveSum, handle, comm,
                                                       nullptr);
      if (ExpectMismatch(comm, r, ternary ? "seed, step or mask" : "which elements it keeps"))
        return 1;
      RANK_CHECK(sieveMaskDeregister(ha) == sieveSuccess && sieveMaskDeregister(hb) == sieveSuccess,
                 "deregister");
      return 0;
    };
    EXPECT_EQ(RunOnHosts(4, 2, body, kMisuseEnv), "") << (ternary ? "ternary" : "masked");
  }
}

}  // namespace
}  // namespace sieve_test
