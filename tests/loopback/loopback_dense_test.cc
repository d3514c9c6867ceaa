// The dense collectives with ranks as threads over the loopback transport:
// the ring (all-reduce, reduce-scatter, all-gather), the tree (all-reduce)
// and the chains (broadcast, reduce) on n in {1, 2, 3, 5, 7, 8} ranks, every
// datatype and op at element counts {0, 1, 7, 1023} and a large odd count in
// segments bigger than the loopback's eager limit (so messages go both eager
// and rendezvous), against the references of the multi-process tests.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "support/mp_harness.h"
#include "support/reference.h"
#include "support/thread_ranks.h"

namespace sieve_test {
namespace {

constexpr size_t kLarge = 100003;

enum Coll { kAllReduce, kReduce, kReduceScatter, kBroadcast, kAllGather };
const char* const kCollNames[] = {"allreduce", "reduce", "reducescatter", "broadcast",
                                  "allgather"};

struct Case {
  Coll coll;
  sieveDataType_t dtype;
  sieveRedOp_t op;
  size_t count;  // per rank (allgather: sent; reducescatter: received)
  bool in_place;
  int root;
  uint64_t seed;
};

// Runs one case; "" or what went wrong.
std::string RunCase(sieveComm_t comm, int rank, int n, const Case& c) {
  const size_t es = TypeSize(c.dtype);
  const bool gathered = c.coll == kAllGather, scattered = c.coll == kReduceScatter;
  const size_t in_count = scattered ? c.count * n : c.count;
  const size_t out_count = gathered ? c.count * n : c.count;
  // One guard element past the end on both sides.
  const size_t recv_count = c.in_place && scattered ? in_count : out_count;
  std::vector<char> send(in_count * es + es), recv(recv_count * es + es, static_cast<char>(0x5a));
  char* sendp = send.data();
  char* recvp = recv.data();
  if (c.in_place) {  // where NCCL puts the input of an in-place call
    sendp = recv.data() + (gathered ? rank * c.count * es : 0);
    if (scattered) recvp = recv.data() + rank * c.count * es;
  }
  FillInput(c.seed, rank, c.dtype, c.op, 0, in_count, sendp);
  sieveResult_t res = sieveSuccess;
  switch (c.coll) {
    case kAllReduce: res = sieveAllReduce(sendp, recvp, c.count, c.dtype, c.op, comm, nullptr); break;
    case kReduce:
      res = sieveReduce(sendp, recvp, c.count, c.dtype, c.op, c.root, comm, nullptr);
      break;
    case kReduceScatter:
      res = sieveReduceScatter(sendp, recvp, c.count, c.dtype, c.op, comm, nullptr);
      break;
    case kBroadcast:
      res = sieveBroadcast(sendp, recvp, c.count, c.dtype, c.root, comm, nullptr);
      break;
    case kAllGather: res = sieveAllGather(sendp, recvp, c.count, c.dtype, comm, nullptr); break;
  }
  char what[160];
  std::snprintf(what, sizeof(what), "%s %s %s count %zu %s root %d on %d ranks",
                kCollNames[c.coll], TypeName(c.dtype), OpName(c.op), c.count,
                c.in_place ? "in place" : "out of place", c.root, n);
  if (res != sieveSuccess) return std::string(what) + ": " + sieveGetLastError(comm);
  if (c.coll == kReduce && rank != c.root) return "";  // recvbuff is the root's only
  std::vector<char> expected(out_count * es);
  switch (c.coll) {
    case kAllReduce:
    case kReduce:
      ExpectedReduction(c.seed, n, c.dtype, c.op, 0, c.count, expected.data());
      break;
    case kReduceScatter:
      ExpectedReduction(c.seed, n, c.dtype, c.op, rank * c.count, c.count, expected.data());
      break;
    case kBroadcast: FillInput(c.seed, c.root, c.dtype, c.op, 0, c.count, expected.data()); break;
    case kAllGather:
      for (int r = 0; r < n; ++r)
        FillInput(c.seed, r, c.dtype, c.op, 0, c.count, expected.data() + r * c.count * es);
      break;
  }
  size_t first = 0;
  size_t wrong = CountMismatches(recvp, expected.data(), out_count, es, &first);
  if (wrong != 0)
    return std::string(what) + ": " + std::to_string(wrong) + " elements wrong, first at " +
           std::to_string(first);
  if (!c.in_place && recv[recv.size() - 1] != 0x5a) return std::string(what) + ": wrote past the end";
  return "";
}

// Every collective x datatype x op at the small counts (in place on every
// other case), and a few of each collective at the large count.
std::vector<Case> Cases(int n) {
  std::vector<Case> cases;
  uint64_t seed = 7000 + 100 * n;
  auto add = [&](Coll coll, sieveDataType_t t, sieveRedOp_t op, size_t count) {
    ++seed;
    cases.push_back({coll, t, op, count, seed % 2 == 0, static_cast<int>(seed % n), seed});
  };
  for (size_t count : {size_t{0}, size_t{1}, size_t{7}, size_t{1023}})
    for (sieveDataType_t t : kAllTypes) {
      for (Coll coll : {kAllReduce, kReduce, kReduceScatter})
        for (sieveRedOp_t op : kAllOps) add(coll, t, op, count);
      add(kBroadcast, t, sieveSum, count);
      add(kAllGather, t, sieveSum, count);
    }
  const struct {
    sieveDataType_t t;
    sieveRedOp_t op;
  } large[] = {{sieveFloat32, sieveSum}, {sieveBfloat16, sieveAvg}, {sieveInt64, sieveProd},
               {sieveUint8, sieveMax}};
  for (const auto& l : large)
    for (Coll coll : {kAllReduce, kReduce, kReduceScatter, kBroadcast, kAllGather})
      add(coll, l.t, l.op, coll == kAllGather || coll == kReduceScatter ? kLarge / n | 1 : kLarge);
  return cases;
}

int RunAll(int rank, int n, const sieveUniqueId& id) {
  sieveComm_t comm = nullptr;
  RANK_CHECK(InitComm(rank, n, id, &comm) == 0, "%s", sieveGetLastError(nullptr));
  int bad = 0;
  for (const Case& c : Cases(n)) {
    std::string e = RunCase(comm, rank, n, c);
    if (!e.empty() && bad++ < 5) std::fprintf(stderr, "rank %d: %s\n", rank, e.c_str());
  }
  RANK_CHECK(sieveCommDestroy(comm) == sieveSuccess, "destroy");
  RANK_CHECK(bad == 0, "%d cases wrong", bad);
  return 0;
}

RankSpec Spec(int n, const std::string& algo) {
  RankSpec spec;
  spec.nranks = n;
  spec.kill_after_s = 120;
  // 32 KiB segments: the large count travels in many segments, each above the
  // loopback's eager limit (rendezvous), while the small counts go eager.
  spec.env = {{"SIEVE_TIMEOUT", "30"}, {"SIEVE_SEGMENT_BYTES", "32k"}, {"SIEVE_ALGO", algo}};
  return spec;
}

class LoopbackDenseTest : public ::testing::TestWithParam<int> {};

// AUTO: the tree for small all-reduces on 3+ ranks, the ring for the large ones.
TEST_P(LoopbackDenseTest, EveryCollectiveTypeOpAndCountMatchesTheReference) {
  EXPECT_EQ(RunThreadRanks(Spec(GetParam(), "AUTO"), RunAll), "");
}

INSTANTIATE_TEST_SUITE_P(Ranks, LoopbackDenseTest, ::testing::Values(1, 2, 3, 5, 7, 8));

// Forced algorithms for the all-reduce: the ring at small counts, the tree at large ones.
int RunAllReduces(int rank, int n, const sieveUniqueId& id) {
  sieveComm_t comm = nullptr;
  RANK_CHECK(InitComm(rank, n, id, &comm) == 0, "%s", sieveGetLastError(nullptr));
  int bad = 0;
  uint64_t seed = 900 + n;
  auto run = [&](sieveDataType_t t, sieveRedOp_t op, size_t count) {
    ++seed;
    std::string e = RunCase(comm, rank, n, {kAllReduce, t, op, count, seed % 2 == 0, 0, seed});
    if (!e.empty() && bad++ < 5) std::fprintf(stderr, "rank %d: %s\n", rank, e.c_str());
  };
  for (size_t count : {size_t{0}, size_t{1}, size_t{7}, size_t{1023}})
    for (sieveDataType_t t : {sieveFloat16, sieveFloat64, sieveInt32, sieveUint64})
      for (sieveRedOp_t op : kAllOps) run(t, op, count);
  run(sieveFloat64, sieveAvg, kLarge);
  run(sieveInt32, sieveProd, kLarge);
  RANK_CHECK(sieveCommDestroy(comm) == sieveSuccess, "destroy");
  RANK_CHECK(bad == 0, "%d cases wrong", bad);
  return 0;
}

class LoopbackForcedAlgoTest : public ::testing::TestWithParam<std::tuple<std::string, int>> {};

TEST_P(LoopbackForcedAlgoTest, AllReduceMatchesTheReference) {
  EXPECT_EQ(RunThreadRanks(Spec(std::get<1>(GetParam()), std::get<0>(GetParam())), RunAllReduces),
            "");
}

INSTANTIATE_TEST_SUITE_P(Algos, LoopbackForcedAlgoTest,
                         ::testing::Combine(::testing::Values(std::string("RING"), std::string("TREE"),
                                                              std::string("ONESHOT")),
                                            ::testing::Values(2, 3, 5, 8)));

// The one-shot adds every rank's input on every rank in rank order, so float
// sums that round differently in another order still come out bit for bit as
// ((x0 + x1) + x2) + ... on every rank (inputs with full mantissas), also in
// segments (20011 floats: three of Spec's 32 KiB, unequal).
float OneShotInput(int rank, size_t i) {
  uint64_t x = (rank + 1) * 0x9e3779b97f4a7c15ULL ^ (i + 1) * 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 31;
  x *= 0x94d049bb133111ebULL;
  x ^= x >> 29;
  return static_cast<float>(static_cast<double>(x >> 11) / 9007199254740992.0 * 2.0 - 1.0) *
         (1.0f + static_cast<float>(rank) * 1e3f);
}

int RunOneShotOrder(int rank, int n, const sieveUniqueId& id) {
  sieveComm_t comm = nullptr;
  RANK_CHECK(InitComm(rank, n, id, &comm) == 0, "%s", sieveGetLastError(nullptr));
  const size_t count = 20011;
  std::vector<float> expected(count);
  for (size_t i = 0; i < count; ++i) {
    float sum = OneShotInput(0, i);
    for (int r = 1; r < n; ++r) sum += OneShotInput(r, i);
    expected[i] = sum;
  }
  for (bool in_place : {false, true}) {
    std::vector<float> in(count), out(count, 0.0f);
    for (size_t i = 0; i < count; ++i) in[i] = OneShotInput(rank, i);
    float* sendp = in_place ? out.data() : in.data();
    if (in_place) out = in;
    RANK_CHECK(sieveAllReduce(sendp, out.data(), count, sieveFloat32, sieveSum, comm, nullptr) ==
                   sieveSuccess,
               "%s", sieveGetLastError(comm));
    for (size_t i = 0; i < count; ++i)
      RANK_CHECK(std::memcmp(&out[i], &expected[i], sizeof(float)) == 0,
                 "%s element %zu: %.9g, rank order gives %.9g", in_place ? "in place" : "out of place",
                 i, out[i], expected[i]);
  }
  RANK_CHECK(sieveCommDestroy(comm) == sieveSuccess, "destroy");
  return 0;
}

TEST(LoopbackOneShotTest, EveryRankAddsInRankOrder) {
  for (int n : {3, 4}) EXPECT_EQ(RunThreadRanks(Spec(n, "ONESHOT"), RunOneShotOrder), "") << n;
}

// Send/receive in groups: an all-to-all (itself included), odd sizes both
// sides of the eager limit, three rounds in a row (ordering across calls).
int RunPointToPoint(int rank, int n, const sieveUniqueId& id) {
  sieveComm_t comm = nullptr;
  RANK_CHECK(InitComm(rank, n, id, &comm) == 0, "%s", sieveGetLastError(nullptr));
  for (size_t count : {size_t{1}, size_t{1001}, size_t{30001}}) {
    for (int round = 0; round < 3; ++round) {
      std::vector<int32_t> out(count * n), in(count * n, -1);
      for (size_t i = 0; i < out.size(); ++i)
        out[i] = static_cast<int32_t>(rank * 1000003 + round * 7 + i);
      RANK_CHECK(sieveGroupStart() == sieveSuccess, "group start");
      for (int p = 0; p < n; ++p) {
        RANK_CHECK(sieveSend(out.data() + p * count, count, sieveInt32, p, comm, nullptr) ==
                       sieveSuccess, "%s", sieveGetLastError(comm));
        RANK_CHECK(sieveRecv(in.data() + p * count, count, sieveInt32, p, comm, nullptr) ==
                       sieveSuccess, "%s", sieveGetLastError(comm));
      }
      RANK_CHECK(sieveGroupEnd() == sieveSuccess, "%s", sieveGetLastError(nullptr));
      for (int p = 0; p < n; ++p)
        for (size_t i = 0; i < count; ++i)
          RANK_CHECK(in[p * count + i] ==
                         static_cast<int32_t>(p * 1000003 + round * 7 + rank * count + i),
                     "count %zu round %d: element %zu from rank %d", count, round, i, p);
    }
  }
  RANK_CHECK(sieveCommDestroy(comm) == sieveSuccess, "destroy");
  return 0;
}

TEST(LoopbackPointToPointTest, AllToAllInGroupsOnFiveRanks) {
  EXPECT_EQ(RunThreadRanks(Spec(5, "AUTO"), RunPointToPoint), "");
}

}  // namespace
}  // namespace sieve_test
