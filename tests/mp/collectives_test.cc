// Every dense collective x every datatype x every op x sizes {0, 1, 7, 1023}
// x in-place/out-of-place, and a rotating cover of them at 1M+3, on n in
// {2, 3, 4, 8} real processes, against the reference on fresh pseudo-random
// data (a new seed per case). Plus Send/
// Recv in groups (ring exchange, all-to-all) and forced ring/tree all-reduce.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "support/mp_harness.h"
#include "support/reference.h"

namespace sieve_test {
namespace {

const size_t kSizes[] = {0, 1, 7, 1023, (1u << 20) + 3};

enum Coll { kAllReduce, kReduce, kReduceScatter, kBroadcast, kAllGather };
const char* kCollNames[] = {"allreduce", "reduce", "reducescatter", "broadcast", "allgather"};

struct Case {
  Coll coll;
  sieveDataType_t dtype;
  sieveRedOp_t op;
  size_t size;
  bool in_place;
  int root;
  uint64_t seed;
};

std::string Describe(const Case& c) {
  char buf[160];
  std::snprintf(buf, sizeof(buf), "%s %s %s size %zu %s root %d", kCollNames[c.coll],
                TypeName(c.dtype), OpName(c.op), c.size, c.in_place ? "in-place" : "out-of-place",
                c.root);
  return buf;
}

// Per-rank element count: gather/scatter collectives split `size` over ranks
// (keeping it odd), the others use it as is.
size_t RankCount(const Case& c, int n) {
  if (c.coll != kAllGather && c.coll != kReduceScatter) return c.size;
  if (c.size <= 1023) return c.size;
  return (c.size / n) | 1;
}

// Runs one case on this rank; returns the number of wrong elements (or -1 on a call error).
long RunCase(sieveComm_t comm, int rank, int n, const Case& c) {
  size_t count = RankCount(c, n), esize = TypeSize(c.dtype);
  bool gathered = c.coll == kAllGather, scattered = c.coll == kReduceScatter;
  size_t send_count = scattered ? count * n : count;
  size_t recv_count = gathered ? count * n : count;
  std::vector<char> recv(recv_count * esize + 1), send(send_count * esize + 1);
  // In place: the input lives inside recvbuff where NCCL puts it.
  char* sendp = send.data();
  if (c.in_place) sendp = gathered ? recv.data() + rank * count * esize : recv.data();
  if (c.in_place && scattered) {
    recv.resize(send_count * esize + 1);
    sendp = recv.data();
  }
  FillInput(c.seed, rank, c.dtype, c.op, 0, send_count, sendp);
  void* recvp = c.in_place && scattered ? recv.data() + rank * count * esize : recv.data();
  sieveResult_t res = sieveSuccess;
  switch (c.coll) {
    case kAllReduce: res = sieveAllReduce(sendp, recvp, count, c.dtype, c.op, comm, nullptr); break;
    case kReduce: res = sieveReduce(sendp, recvp, count, c.dtype, c.op, c.root, comm, nullptr); break;
    case kReduceScatter:
      res = sieveReduceScatter(sendp, recvp, count, c.dtype, c.op, comm, nullptr);
      break;
    case kBroadcast: res = sieveBroadcast(sendp, recvp, count, c.dtype, c.root, comm, nullptr); break;
    case kAllGather: res = sieveAllGather(sendp, recvp, count, c.dtype, comm, nullptr); break;
  }
  if (res != sieveSuccess) {
    std::fprintf(stderr, "rank %d: %s: %s\n", rank, Describe(c).c_str(), sieveGetLastError(comm));
    return -1;
  }
  std::vector<char> expected(recv_count * esize + 1);
  size_t check_count = recv_count;
  switch (c.coll) {
    case kAllReduce: ExpectedReduction(c.seed, n, c.dtype, c.op, 0, count, expected.data()); break;
    case kReduce:
      if (rank != c.root) return 0;  // recvbuff is only defined on the root
      ExpectedReduction(c.seed, n, c.dtype, c.op, 0, count, expected.data());
      break;
    case kReduceScatter:
      ExpectedReduction(c.seed, n, c.dtype, c.op, rank * count, count, expected.data());
      break;
    case kBroadcast: FillInput(c.seed, c.root, c.dtype, c.op, 0, count, expected.data()); break;
    case kAllGather:
      for (int r = 0; r < n; ++r)
        FillInput(c.seed, r, c.dtype, c.op, 0, count, expected.data() + r * count * esize);
      break;
  }
  size_t first = 0;
  size_t wrong = CountMismatches(recvp, expected.data(), check_count, esize, &first);
  if (wrong > 0)
    std::fprintf(stderr, "rank %d: %s: %zu of %zu elements wrong (first at %zu)\n", rank,
                 Describe(c).c_str(), wrong, check_count, first);
  return static_cast<long>(wrong);
}

// Every collective x type x op x placement at the sizes below one segment; at
// 1M+3 (many pipelined segments, which is what the size adds) each type and
// placement runs one reducing collective with one op, rotating so that every
// collective and every op still meets the large size (the reference costs n
// inputs of 1M elements per case: the full product there took minutes at n = 8).
std::vector<Case> AllCases(int n) {
  std::vector<Case> cases;
  uint64_t seed = 1000 * n;
  const Coll kReducing[] = {kAllReduce, kReduce, kReduceScatter};
  for (size_t size : kSizes) {
    const bool large = size > (1u << 16);
    int turn = 0;
    for (sieveDataType_t dtype : kAllTypes)
      for (bool in_place : {false, true}) {
        ++turn;
        for (Coll coll : kReducing)
          for (sieveRedOp_t op : kAllOps) {
            if (large && (coll != kReducing[turn % 3] || op != kAllOps[turn % 5])) continue;
            cases.push_back({coll, dtype, op, size, in_place, static_cast<int>(seed % n), ++seed});
          }
        for (Coll coll : {kBroadcast, kAllGather}) {
          if (large && (turn % 2 == 0) != (coll == kBroadcast)) continue;
          cases.push_back({coll, dtype, sieveSum, size, in_place, static_cast<int>(seed % n), ++seed});
        }
      }
  }
  return cases;
}

int RunAllCases(int rank, int n, const sieveUniqueId& id) {
  sieveComm_t comm = nullptr;
  RANK_CHECK(sieveCommInitRank(&comm, n, id, rank) == sieveSuccess, "%s", sieveGetLastError(nullptr));
  long bad_cases = 0;
  for (const Case& c : AllCases(n))
    if (RunCase(comm, rank, n, c) != 0) ++bad_cases;
  RANK_CHECK(sieveCommDestroy(comm) == sieveSuccess, "destroy");
  RANK_CHECK(bad_cases == 0, "%ld cases wrong", bad_cases);
  return 0;
}

class CollectivesTest : public ::testing::TestWithParam<int> {};

TEST_P(CollectivesTest, EveryCollectiveTypeOpSizeAndPlacement) {
  RankSpec spec;
  spec.nranks = GetParam();
  spec.env = {{"SIEVE_TIMEOUT", "60"}};
  EXPECT_EQ(RunRanks(spec, RunAllCases), "");
}

INSTANTIATE_TEST_SUITE_P(Ranks, CollectivesTest, ::testing::Values(2, 3, 4, 8));

// Forced algorithms: the ring for tiny messages, the tree and the direct exchange for large ones.
int RunForcedAlgo(int rank, int n, const sieveUniqueId& id) {
  sieveComm_t comm = nullptr;
  RANK_CHECK(sieveCommInitRank(&comm, n, id, rank) == sieveSuccess, "%s", sieveGetLastError(nullptr));
  long bad = 0;
  uint64_t seed = 77;
  for (size_t size : {size_t{1}, size_t{7}, size_t{1023}, size_t{(1 << 20) + 3}})
    for (sieveDataType_t dtype : {sieveFloat32, sieveBfloat16, sieveInt64})
      for (sieveRedOp_t op : kAllOps)
        for (bool in_place : {false, true})
          bad += RunCase(comm, rank, n, {kAllReduce, dtype, op, size, in_place, 0, ++seed}) != 0;
  RANK_CHECK(sieveCommDestroy(comm) == sieveSuccess, "destroy");
  RANK_CHECK(bad == 0, "%ld cases wrong", bad);
  return 0;
}

class ForcedAlgoTest : public ::testing::TestWithParam<std::tuple<const char*, int>> {};

TEST_P(ForcedAlgoTest, AllReduceMatchesReference) {
  RankSpec spec;
  spec.nranks = std::get<1>(GetParam());
  // Small segments so even 1M elements go through many pipelined segments.
  spec.env = {{"SIEVE_ALGO", std::get<0>(GetParam())}, {"SIEVE_SEGMENT_BYTES", "64k"}};
  EXPECT_EQ(RunRanks(spec, RunForcedAlgo), "");
}

INSTANTIATE_TEST_SUITE_P(Algos, ForcedAlgoTest,
                         ::testing::Combine(::testing::Values("ring", "tree", "direct"),
                                            ::testing::Values(3, 5)));

// UCX over TCP only, as between hosts: segments go eagerly and the ring combines each
// reduce-scatter message from UCX's receive buffer as its fragments arrive (ReduceSink),
// whose 256 KiB fragments end inside elements and sit at odd addresses.
class TcpRingTest : public ::testing::TestWithParam<int> {};

TEST_P(TcpRingTest, StreamedReduceScatterMatchesReference) {
  RankSpec spec;
  spec.nranks = GetParam();
  spec.env = {{"SIEVE_ALGO", "ring"}, {"UCX_TLS", "tcp"}, {"UCX_NET_DEVICES", "lo"}};
  EXPECT_EQ(RunRanks(spec, RunForcedAlgo), "");
}

INSTANTIATE_TEST_SUITE_P(Ranks, TcpRingTest, ::testing::Values(2, 4));

// Send/Recv inside groups: each rank sends to every rank (itself included) and
// receives from every rank, all in one group; then a ring shift of odd size.
int RunPointToPoint(int rank, int n, const sieveUniqueId& id) {
  sieveComm_t comm = nullptr;
  RANK_CHECK(sieveCommInitRank(&comm, n, id, rank) == sieveSuccess, "%s", sieveGetLastError(nullptr));
  const size_t count = 1001;
  std::vector<int32_t> send(count * n), recv(count * n, -1);
  for (size_t i = 0; i < send.size(); ++i) send[i] = static_cast<int32_t>(rank * 1000003 + i);
  RANK_CHECK(sieveGroupStart() == sieveSuccess, "group start");
  for (int p = 0; p < n; ++p) {
    RANK_CHECK(sieveSend(send.data() + p * count, count, sieveInt32, p, comm, nullptr) == sieveSuccess,
               "%s", sieveGetLastError(comm));
    RANK_CHECK(sieveRecv(recv.data() + p * count, count, sieveInt32, p, comm, nullptr) == sieveSuccess,
               "%s", sieveGetLastError(comm));
  }
  RANK_CHECK(sieveGroupEnd() == sieveSuccess, "%s", sieveGetLastError(nullptr));
  for (int p = 0; p < n; ++p)
    for (size_t i = 0; i < count; ++i)
      RANK_CHECK(recv[p * count + i] == static_cast<int32_t>(p * 1000003 + rank * count + i),
                 "all-to-all element %zu from rank %d", i, p);
  // Ring shift: send to rank+1, receive from rank-1, 3 times in a row (ordering).
  for (int round = 0; round < 3; ++round) {
    std::vector<double> out(777, rank + 0.5 + round), in(777, -1);
    RANK_CHECK(sieveGroupStart() == sieveSuccess, "group start");
    sieveSend(out.data(), out.size(), sieveDouble, (rank + 1) % n, comm, nullptr);
    sieveRecv(in.data(), in.size(), sieveDouble, (rank + n - 1) % n, comm, nullptr);
    RANK_CHECK(sieveGroupEnd() == sieveSuccess, "%s", sieveGetLastError(nullptr));
    for (double v : in) RANK_CHECK(v == (rank + n - 1) % n + 0.5 + round, "ring value %f", v);
  }
  RANK_CHECK(sieveCommDestroy(comm) == sieveSuccess, "destroy");
  return 0;
}

class PointToPointTest : public ::testing::TestWithParam<int> {};

TEST_P(PointToPointTest, GroupedAllToAllAndRingShift) {
  RankSpec spec;
  spec.nranks = GetParam();
  EXPECT_EQ(RunRanks(spec, RunPointToPoint), "");
}

INSTANTIATE_TEST_SUITE_P(Ranks, PointToPointTest, ::testing::Values(2, 3, 4, 8));

}  // namespace
}  // namespace sieve_test

namespace sieve_test {
namespace {

// Counters: a ring all-reduce sends every chunk but our own in the
// reduce-scatter and every chunk but our successor's in the all-gather, and
// receives the same amount; nothing else travels.
int RunTrafficCount(int rank, int n, const sieveUniqueId& id) {
  sieveComm_t comm = nullptr;
  RANK_CHECK(sieveCommInitRank(&comm, n, id, rank) == sieveSuccess, "%s", sieveGetLastError(nullptr));
  const size_t count = 100003;
  std::vector<float> data(count);
  FillInput(5, rank, sieveFloat32, sieveSum, 0, count, data.data());
  RANK_CHECK(sieveAllReduce(data.data(), data.data(), count, sieveFloat32, sieveSum, comm,
                            nullptr) == sieveSuccess, "%s", sieveGetLastError(comm));
  sieveCounters_t c{};
  RANK_CHECK(sieveCommGetCounters(comm, &c) == sieveSuccess, "%s", sieveGetLastError(comm));
  auto chunk = [&](int r) { return count * (r + 1) / n - count * r / n; };
  uint64_t expect_sent = ((count - chunk(rank)) + (count - chunk((rank + 1) % n))) * 4;
  uint64_t expect_recv = ((count - chunk((rank + n - 1) % n)) + (count - chunk(rank))) * 4;
  RANK_CHECK(c.bytes_sent == expect_sent, "sent %llu, expected %llu",
             (unsigned long long)c.bytes_sent, (unsigned long long)expect_sent);
  RANK_CHECK(c.bytes_received == expect_recv, "received %llu, expected %llu",
             (unsigned long long)c.bytes_received, (unsigned long long)expect_recv);
  RANK_CHECK(c.collectives == 1, "collectives %llu", (unsigned long long)c.collectives);
  RANK_CHECK(sieveCommDestroy(comm) == sieveSuccess, "destroy");
  return 0;
}

class TrafficTest : public ::testing::TestWithParam<int> {};

TEST_P(TrafficTest, RingAllReduceMovesTwoTimesNMinusOneOverNOfTheData) {
  RankSpec spec;
  spec.nranks = GetParam();
  spec.env = {{"SIEVE_ALGO", "ring"}};
  EXPECT_EQ(RunRanks(spec, RunTrafficCount), "");
}

INSTANTIATE_TEST_SUITE_P(Ranks, TrafficTest, ::testing::Values(2, 3, 5));

}  // namespace
}  // namespace sieve_test
