// Agreement and mismatch detection, driven by SIEVE_FAULT and by ranks that
// deliberately call different collectives:
//  - when one rank's operation fails (a receive fails, a message is dropped,
//    truncated or corrupted, a connection cannot be made) every rank reports
//    an error for that sequence number: none reports success;
//  - without agreement (SIEVE_AGREEMENT=0) the ranks may disagree about that
//    operation, but every rank's next one fails;
//  - ranks that differ in collective, count, datatype, op, root, algorithm,
//    segment size or ternary parameters all get sieveInvalidUsage naming the
//    field, and the communicator is unusable afterwards;
//  - the same for the subnet collectives: SDP against dense or D2FT, another
//    layout (holders, number of segments, count), datatype, or D2FT ranks
//    that learn their bitmaps differently (touched vs schedule).
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "support/fault_support.h"
#include "support/mp_harness.h"

namespace sieve_test {
namespace {

// ---- Agreement ---------------------------------------------------------------------------------

struct AgreementCase {
  const char* name;
  const char* fault;
  const char* timeout;
  const char* algo = "AUTO";  // SIEVE_ALGO
};

// The faults on data messages that both suites below run.
// Rank 3's last receive (all-gather) fails: the others already hold everything.
const AgreementCase kLastReceiveFails{"LastReceiveFails",
                                      "rank=3,on=recv,min=65536,nth=12,do=fail", "10"};
// Rank 0's last send is swallowed: only rank 1 misses data, and times out.
const AgreementCase kLastSendDropped{"LastSendDropped", "rank=0,on=send,min=65536,nth=12,do=drop",
                                     "1"};
// The one-shot (24 data messages each way per rank): rank 3's last receive fails after
// the others hold every input (and said ok before adding the last segment:
// Channel::Vouch); rank 0's last send is swallowed.
const AgreementCase kOneShotLastReceiveFails{
    "OneShotLastReceiveFails", "rank=3,on=recv,min=65536,nth=24,do=fail", "10", "ONESHOT"};
const AgreementCase kOneShotLastSendDropped{
    "OneShotLastSendDropped", "rank=0,on=send,min=65536,nth=24,do=drop", "1", "ONESHOT"};

// 4 ranks under the case's fault, timeout and algorithm.
RankSpec FaultedRanks(const AgreementCase& c) {
  RankSpec spec;
  spec.nranks = 4;
  spec.kill_after_s = 60;
  spec.env = {{"SIEVE_TIMEOUT", c.timeout}, {"SIEVE_FAULT", c.fault}, {"SIEVE_ALGO", c.algo}};
  return spec;
}

// One 4 MiB all-reduce of rank + 1 everywhere into recv: ring chunks of 1 MiB in 2
// segments of 512 KiB, so each rank sends and receives 12 data messages (6 steps x 2
// segments); the one-shot (SIEVE_ALGO=ONESHOT) 24: the whole 4 MiB in 8 segments of
// 512 KiB to each of 3 peers, the last segment's last.
sieveResult_t FourMiBAllReduce(sieveComm_t comm, int rank, std::vector<float>* recv) {
  const size_t count = size_t{1} << 20;
  std::vector<float> send(count, float(rank + 1));
  recv->assign(count, 0.0f);
  return sieveAllReduce(send.data(), recv->data(), count, sieveFloat32, sieveSum, comm, nullptr);
}

class AgreementTest : public testing::TestWithParam<AgreementCase> {};

TEST_P(AgreementTest, EveryRankReportsTheSameVerdict) {
  const AgreementCase& c = GetParam();
  SharedFaultBoard board;
  std::string failures = RunRanks(FaultedRanks(c), [&](int rank, int nranks,
                                                       const sieveUniqueId& id) {
    sieveComm_t comm = nullptr;
    RANK_CHECK(sieveCommInitRank(&comm, nranks, id, rank) == sieveSuccess, "%s",
               sieveGetLastError(nullptr));
    std::vector<float> recv;
    auto start = Clock::now();
    sieveResult_t res = FourMiBAllReduce(comm, rank, &recv);
    std::string msg = res == sieveSuccess ? "" : sieveGetLastError(comm);
    std::fprintf(stderr, "rank %d: %s: all-reduce returned %d after %.2f s: %s\n", rank, c.name,
                 int(res), SecondsSince(start), msg.c_str());
    board->result[rank].store(int(res));
    EXPECT_NE(res, sieveSuccess) << "rank " << rank << " reported success for a failed operation";
    if (res != sieveSuccess) {
      EXPECT_NE(msg.find("allreduce #0"), std::string::npos) << "no operation named: " << msg;
      sieveResult_t async = sieveSuccess;
      EXPECT_EQ(sieveCommGetAsyncError(comm, &async), sieveSuccess);
      EXPECT_NE(async, sieveSuccess) << "the failed communicator still looks healthy";
      float one = 1;
      EXPECT_NE(sieveAllReduce(&one, &one, 1, sieveFloat32, sieveSum, comm, nullptr), sieveSuccess)
          << "a call on the failed communicator succeeded";
    }
    EXPECT_EQ(sieveCommAbort(comm), sieveSuccess);
    return 0;
  });
  EXPECT_EQ(failures, "");
  for (int r = 0; r < 4; ++r) EXPECT_NE(board->result[r].load(), int(sieveSuccess)) << "rank " << r;
}

INSTANTIATE_TEST_SUITE_P(
    Faults, AgreementTest,
    testing::Values(
        kLastReceiveFails, kLastSendDropped,
        // Rank 2's first send is cut short: rank 3 sees a size error.
        AgreementCase{"SendTruncated", "rank=2,on=send,min=65536,nth=1,do=truncate", "10"},
        // A flipped byte in rank 1's fingerprint to rank 0 (its datatype field).
        AgreementCase{"FingerprintCorrupted", "rank=1,on=send,size=48,nth=1,do=corrupt,byte=13",
                      "10"},
        // Rank 1 cannot connect to rank 2 (its ring successor).
        AgreementCase{"ConnectFails", "rank=1,on=connect,peer=2,do=fail", "10"},
        kOneShotLastReceiveFails, kOneShotLastSendDropped),
    [](const testing::TestParamInfo<AgreementCase>& info) { return info.param.name; });

// ---- Without agreement (SIEVE_AGREEMENT=0) ------------------------------------------------------

// No verdict round: a rank whose own part succeeded returns success, with the right
// sums, even where a peer failed the same call; but no rank's next call succeeds:
// the failed rank's communicator is unusable, so its fingerprint for the next call
// never comes, and its failure notice fails the others' next call well before the
// timeout. The data faults of AgreementTest (4 ranks, one 4 MiB all-reduce).
class WithoutAgreementTest : public testing::TestWithParam<AgreementCase> {};

TEST_P(WithoutAgreementTest, TheNextCallFailsOnEveryRank) {
  const AgreementCase& c = GetParam();
  SharedFaultBoard board;
  RankSpec spec = FaultedRanks(c);
  spec.env.push_back({"SIEVE_AGREEMENT", "0"});
  const double timeout_s = std::atof(c.timeout);
  std::string failures = RunRanks(spec, [&](int rank, int nranks, const sieveUniqueId& id) {
    sieveComm_t comm = nullptr;
    RANK_CHECK(sieveCommInitRank(&comm, nranks, id, rank) == sieveSuccess, "%s",
               sieveGetLastError(nullptr));
    std::vector<float> recv;
    sieveResult_t first = FourMiBAllReduce(comm, rank, &recv);
    board->result[rank].store(int(first));
    if (first == sieveSuccess) {
      size_t wrong = 0;
      for (float v : recv) wrong += v != float(nranks * (nranks + 1) / 2);
      EXPECT_EQ(wrong, 0u) << "rank " << rank << " returned success with wrong sums";
    }
    // The next call fails at once on the failed rank. A rank whose first call succeeded
    // fails when the failed rank's notice arrives (that rank fails after its own 1-s
    // timeout where a message was swallowed), not after a timeout of its own: 0.3 s in
    // the 10-s-timeout cases here, 10 s with the notice disabled.
    float one = 1;
    auto start = Clock::now();
    sieveResult_t next = sieveAllReduce(&one, &one, 1, sieveFloat32, sieveSum, comm, nullptr);
    const double took = SecondsSince(start);
    std::string msg = next == sieveSuccess ? "" : sieveGetLastError(comm);
    std::fprintf(stderr, "rank %d: %s: first call %d, next call %d after %.2f s: %s\n", rank,
                 c.name, int(first), int(next), took, msg.c_str());
    EXPECT_NE(next, sieveSuccess) << "rank " << rank << ": a call after a peer's failure succeeded";
    EXPECT_LT(took, std::min(timeout_s, 1.0) + 4) << "rank " << rank << ": the next call hung";
    sieveResult_t async = sieveSuccess;
    EXPECT_EQ(sieveCommGetAsyncError(comm, &async), sieveSuccess);
    EXPECT_NE(async, sieveSuccess) << "rank " << rank << ": the communicator still looks healthy";
    // Every rank stays alive until all have made their next call: the others must learn
    // of the failure from the failed rank, not from its process exiting.
    board->reported.fetch_add(1);
    const auto until = Clock::now() + std::chrono::seconds(30);
    while (board->reported.load() < nranks && Clock::now() < until)
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    EXPECT_EQ(sieveCommAbort(comm), sieveSuccess);
    return 0;
  });
  EXPECT_EQ(failures, "");
  int failed_first = 0;
  for (int r = 0; r < 4; ++r) failed_first += board->result[r].load() != int(sieveSuccess);
  EXPECT_GE(failed_first, 1) << "the fault did not fail the first call anywhere";
}

INSTANTIATE_TEST_SUITE_P(
    Faults, WithoutAgreementTest,
    testing::Values(kLastReceiveFails, kLastSendDropped, kOneShotLastReceiveFails,
                    kOneShotLastSendDropped),
    [](const testing::TestParamInfo<AgreementCase>& info) { return info.param.name; });

// ---- Mismatch ----------------------------------------------------------------------------------

// One collective call; `odd` is true on the last rank, which calls something else.
using MismatchCall = std::function<sieveResult_t(sieveComm_t comm, bool odd, float* a, float* b)>;

struct MismatchCase {
  const char* name;
  const char* field;  // must appear in every rank's message (alternatives: "a|b")
  MismatchCall call;
  const char* odd_env_name = nullptr;  // environment the odd rank sets before init
  const char* odd_env_value = nullptr;
  const char* never = nullptr;  // must appear in no rank's message (an internal step's name)
};

class MismatchTest : public testing::TestWithParam<MismatchCase> {};

// `field` is a list of alternatives separated by '|' (the odd rank and the others word it
// differently); true when msg contains one.
bool NamesField(const std::string& msg, const std::string& field) {
  size_t begin = 0;
  while (true) {
    size_t end = field.find('|', begin);
    if (msg.find(field.substr(begin, end - begin)) != std::string::npos) return true;
    if (end == std::string::npos) return false;
    begin = end + 1;
  }
}

TEST_P(MismatchTest, FailsOnEveryRankNamingTheField) {
  const MismatchCase& c = GetParam();
  RankSpec spec;
  spec.nranks = 3;
  spec.kill_after_s = 60;
  spec.env = {{"SIEVE_TIMEOUT", "10"}};
  std::string failures = RunRanks(spec, [&](int rank, int nranks, const sieveUniqueId& id) {
    bool odd = rank == nranks - 1;
    if (odd && c.odd_env_name != nullptr) setenv(c.odd_env_name, c.odd_env_value, 1);
    sieveComm_t comm = nullptr;
    RANK_CHECK(sieveCommInitRank(&comm, nranks, id, rank) == sieveSuccess, "%s",
               sieveGetLastError(nullptr));
    std::vector<float> a(4 * 5003, float(rank + 1)), b(4 * 5003, 0.0f);
    auto start = Clock::now();
    sieveResult_t res = c.call(comm, odd, a.data(), b.data());
    double took = SecondsSince(start);
    std::string msg = sieveGetLastError(comm);
    std::fprintf(stderr, "rank %d: %s mismatch returned %d after %.2f s: %s\n", rank, c.name,
                 int(res), took, msg.c_str());
    EXPECT_EQ(res, sieveInvalidUsage) << msg;
    EXPECT_TRUE(NamesField(msg, c.field)) << "the message does not name " << c.field;
    EXPECT_NE(msg.find("on rank "), std::string::npos) << "the message does not name the peer";
    if (c.never != nullptr) {
      EXPECT_EQ(msg.find(c.never), std::string::npos) << "the message names " << c.never;
    }
    EXPECT_LT(took, 5.0) << "the mismatch was found by a timeout, not by the fingerprints";
    // The communicator is unusable at once (messages of the mismatched calls may be in flight).
    float one = 1;
    start = Clock::now();
    EXPECT_NE(sieveAllReduce(&one, &one, 1, sieveFloat32, sieveSum, comm, nullptr), sieveSuccess);
    EXPECT_LT(SecondsSince(start), 0.5);
    EXPECT_EQ(sieveCommAbort(comm), sieveSuccess);
    return 0;
  });
  EXPECT_EQ(failures, "");
}

sieveResult_t AllReduce(sieveComm_t comm, size_t count, sieveDataType_t t, sieveRedOp_t op,
                        float* a, float* b) {
  return sieveAllReduce(a, b, count, t, op, comm, nullptr);
}

sieveResult_t Ternary(sieveComm_t comm, uint64_t seed, float* a, float* b, size_t count = 5003,
                      size_t block_size = 256, sieveMask_t mask = nullptr) {
  sieveTernaryParams_t p = {};
  p.seed = seed;
  p.step = 3;
  p.block_size = block_size;
  p.mask = mask;
  return sieveAllReduceTernary(a, b, count, sieveFloat32, sieveSum, &p, comm, nullptr);
}

// Registers (collectively) a mask of every other element over `count` elements and one over
// none, runs `use` with them, deregisters both.
sieveResult_t WithMasks(sieveComm_t comm, size_t count,
                        const std::function<sieveResult_t(sieveMask_t full, sieveMask_t none)>& use) {
  std::vector<unsigned char> keep(count);
  for (size_t i = 0; i < count; ++i) keep[i] = i % 2;
  sieveMask_t full = nullptr, none = nullptr;
  if (sieveMaskRegister(comm, keep.data(), sieveMaskBytes, count, sieveMaskStrict, &full) !=
          sieveSuccess ||
      sieveMaskRegister(comm, nullptr, sieveMaskBytes, 0, sieveMaskStrict, &none) != sieveSuccess) {
    std::fprintf(stderr, "mask registration failed: %s\n", sieveGetLastError(comm));
    return sieveInternalError;
  }
  sieveResult_t res = use(full, none);
  sieveMaskDeregister(full);
  sieveMaskDeregister(none);
  return res;
}

// Subnet layouts over kSubnetCount elements, registered by every rank alike.
constexpr size_t kSubnetCount = 5003;
struct Layouts {
  sieveLayout_t split = nullptr;          // [0, 1667) every rank, the rest ranks 0 and 2
  sieveLayout_t other_holders = nullptr;  // the same split, the rest ranks 1 and 2
  sieveLayout_t three_equal = nullptr;    // 3 equal subnets held by every rank
  sieveLayout_t shorter = nullptr;        // 2 equal subnets over kSubnetCount - 1 elements
};

sieveResult_t RegisterSplit(sieveComm_t comm, std::vector<int> rest, sieveLayout_t* out) {
  const int all[] = {0, 1, 2};
  sieveSegment_t segs[2] = {{0, 1667, all, 3},
                            {1667, kSubnetCount - 1667, rest.data(), int(rest.size())}};
  return sieveLayoutRegister(comm, kSubnetCount, segs, 2, out);
}

// Registers the layouts (collective), runs `use`, deregisters them.
sieveResult_t WithLayouts(sieveComm_t comm, const std::function<sieveResult_t(const Layouts&)>& use) {
  Layouts l;
  if (RegisterSplit(comm, {0, 2}, &l.split) != sieveSuccess ||
      RegisterSplit(comm, {1, 2}, &l.other_holders) != sieveSuccess ||
      sieveLayoutEqualSubnets(comm, kSubnetCount, 3, &l.three_equal) != sieveSuccess ||
      sieveLayoutEqualSubnets(comm, kSubnetCount - 1, 2, &l.shorter) != sieveSuccess) {
    std::fprintf(stderr, "layout registration failed: %s\n", sieveGetLastError(comm));
    return sieveInternalError;
  }
  sieveResult_t res = use(l);
  for (sieveLayout_t h : {l.split, l.other_holders, l.three_equal, l.shorter})
    sieveLayoutDeregister(h);
  return res;
}

// Every segment of the 3-subnet layout touched, as this rank's bitmap or as the schedule.
sieveResult_t D2ft(sieveComm_t comm, sieveLayout_t layout, bool schedule, float* a, float* b) {
  const unsigned char touched = 0x07, table[3] = {0x07, 0x07, 0x07};
  return sieveAllReduceD2ft(a, b, kSubnetCount, sieveFloat32, layout, schedule ? nullptr : &touched,
                            schedule ? table : nullptr, comm, nullptr);
}

INSTANTIATE_TEST_SUITE_P(
    Subnet, MismatchTest,
    testing::Values(
        MismatchCase{"SubnetVsDense", "collective",
                     [](sieveComm_t c, bool odd, float* a, float* b) {
                       return WithLayouts(c, [&](const Layouts& l) {
                         return odd ? AllReduce(c, kSubnetCount, sieveFloat32, sieveSum, a, b)
                                    : sieveAllReduceSubnet(a, b, kSubnetCount, sieveFloat32,
                                                           l.split, c, nullptr);
                       });
                     }},
        MismatchCase{"D2ftVsSubnet", "collective",
                     [](sieveComm_t c, bool odd, float* a, float* b) {
                       return WithLayouts(c, [&](const Layouts& l) {
                         return odd ? D2ft(c, l.three_equal, false, a, b)
                                    : sieveAllReduceSubnet(a, b, kSubnetCount, sieveFloat32,
                                                           l.three_equal, c, nullptr);
                       });
                     }},
        // Same count and segments, other holders: only the layout hash differs.
        MismatchCase{"SubnetLayout", "layout (hash)",
                     [](sieveComm_t c, bool odd, float* a, float* b) {
                       return WithLayouts(c, [&](const Layouts& l) {
                         return sieveAllReduceSubnet(a, b, kSubnetCount, sieveFloat32,
                                                     odd ? l.other_holders : l.split, c, nullptr);
                       });
                     }},
        MismatchCase{"SubnetSegments", "layout segments",
                     [](sieveComm_t c, bool odd, float* a, float* b) {
                       return WithLayouts(c, [&](const Layouts& l) {
                         return sieveAllReduceSubnet(a, b, kSubnetCount, sieveFloat32,
                                                     odd ? l.three_equal : l.split, c, nullptr);
                       });
                     }},
        MismatchCase{"SubnetCount", "count",
                     [](sieveComm_t c, bool odd, float* a, float* b) {
                       return WithLayouts(c, [&](const Layouts& l) {
                         return odd ? sieveAllReduceSubnet(a, b, kSubnetCount - 1, sieveFloat32,
                                                           l.shorter, c, nullptr)
                                    : sieveAllReduceSubnet(a, b, kSubnetCount, sieveFloat32,
                                                           l.split, c, nullptr);
                       });
                     }},
        // float64 on the odd rank (the buffers hold 4 * 5003 floats, room for 5003 doubles).
        MismatchCase{"SubnetDatatype", "datatype",
                     [](sieveComm_t c, bool odd, float* a, float* b) {
                       return WithLayouts(c, [&](const Layouts& l) {
                         return sieveAllReduceSubnet(a, b, kSubnetCount,
                                                     odd ? sieveFloat64 : sieveFloat32, l.split, c,
                                                     nullptr);
                       });
                     }},
        MismatchCase{"D2ftBitmaps", "D2FT bitmaps",
                     [](sieveComm_t c, bool odd, float* a, float* b) {
                       return WithLayouts(
                           c, [&](const Layouts& l) { return D2ft(c, l.three_equal, odd, a, b); });
                     }}),
    [](const testing::TestParamInfo<MismatchCase>& info) { return info.param.name; });

INSTANTIATE_TEST_SUITE_P(
    Fields, MismatchTest,
    testing::Values(
        MismatchCase{"Count", "count",
                     [](sieveComm_t c, bool odd, float* a, float* b) {
                       return AllReduce(c, odd ? 5004 : 5003, sieveFloat32, sieveSum, a, b);
                     }},
        // Same byte size: without fingerprints this would silently add floats as integers.
        MismatchCase{"Datatype", "datatype",
                     [](sieveComm_t c, bool odd, float* a, float* b) {
                       return AllReduce(c, 5003, odd ? sieveInt32 : sieveFloat32, sieveSum, a, b);
                     }},
        MismatchCase{"Op", "op ",
                     [](sieveComm_t c, bool odd, float* a, float* b) {
                       return AllReduce(c, 5003, sieveFloat32, odd ? sieveMax : sieveSum, a, b);
                     }},
        MismatchCase{"Root", "root",
                     [](sieveComm_t c, bool odd, float* a, float* b) {
                       return sieveBroadcast(a, b, 5003, sieveFloat32, odd ? 1 : 0, c, nullptr);
                     }},
        MismatchCase{"Collective", "collective",
                     [](sieveComm_t c, bool odd, float* a, float* b) {
                       return odd ? sieveReduceScatter(a, b, 5003, sieveFloat32, sieveSum, c,
                                                       nullptr)
                                  : sieveAllGather(a, b, 5003, sieveFloat32, c, nullptr);
                     }},
        // 4 KB: the default takes the tree on this local link (a tree's extra bytes are
        // cheap even at the assumed 100 Mbit/s), the odd ranks the forced ring.
        MismatchCase{"Algorithm", "SIEVE_ALGO",
                     [](sieveComm_t c, bool, float* a, float* b) {
                       return AllReduce(c, 1003, sieveFloat32, sieveSum, a, b);
                     },
                     "SIEVE_ALGO", "RING"},
        MismatchCase{"SegmentSize", "SIEVE_SEGMENT_BYTES",
                     [](sieveComm_t c, bool, float* a, float* b) {
                       return AllReduce(c, 4 * 5003, sieveFloat32, sieveSum, a, b);
                     },
                     "SIEVE_SEGMENT_BYTES", "4k"},
        MismatchCase{"TernarySeed", "seed, step or mask",
                     [](sieveComm_t c, bool odd, float* a, float* b) {
                       return Ternary(c, odd ? 8 : 7, a, b);
                     }},
        // Found at the scales step, and named as the user's call and field (issue 22).
        MismatchCase{"TernaryBlockSize", "block_size",
                     [](sieveComm_t c, bool odd, float* a, float* b) {
                       return Ternary(c, 7, a, b, 5003, odd ? 512 : 256);
                     },
                     nullptr, nullptr, "max"},
        // sieveAllReduceQuantized: the level count is part of the agreed call.
        MismatchCase{"QuantizedLevels", "levels",
                     [](sieveComm_t c, bool odd, float* a, float* b) {
                       sieveTernaryParams_t p = {};
                       p.seed = 7;
                       p.step = 3;
                       p.block_size = 256;
                       return sieveAllReduceQuantized(a, b, 5003, sieveFloat32, sieveSum,
                                                      odd ? 7 : 3, &p, c, nullptr);
                     },
                     nullptr, nullptr, "max"},
        // sieveReduceScatterQuantized: the same field, named as the reduce-scatter's.
        MismatchCase{"QuantizedReduceScatterLevels", "levels",
                     [](sieveComm_t c, bool odd, float* a, float* b) {
                       sieveTernaryParams_t p = {};
                       p.seed = 7;
                       p.block_size = 256;
                       return sieveReduceScatterQuantized(a, b, 5003, sieveFloat32, sieveAvg,
                                                          odd ? 7 : 3, &p, c, nullptr);
                     },
                     nullptr, nullptr, "max"}),
    [](const testing::TestParamInfo<MismatchCase>& info) { return info.param.name; });

// A count of 0 on one rank still takes part in the call's agreement (DESIGN.md 1.6): before,
// that rank returned at once and every later call paired with the peers' previous one.
INSTANTIATE_TEST_SUITE_P(
    ZeroCount, MismatchTest,
    testing::Values(
        MismatchCase{"AllReduce", "count 0 here|here, 0 on rank",
                     [](sieveComm_t c, bool odd, float* a, float* b) {
                       return AllReduce(c, odd ? 0 : 5003, sieveFloat32, sieveSum, a, b);
                     }},
        MismatchCase{"Broadcast", "count 0 here|here, 0 on rank",
                     [](sieveComm_t c, bool odd, float* a, float* b) {
                       return sieveBroadcast(a, b, odd ? 0 : 5003, sieveFloat32, 0, c, nullptr);
                     }},
        MismatchCase{"Reduce", "count 0 here|here, 0 on rank",
                     [](sieveComm_t c, bool odd, float* a, float* b) {
                       return sieveReduce(a, b, odd ? 0 : 5003, sieveFloat32, sieveSum, 0, c,
                                          nullptr);
                     }},
        MismatchCase{"AllGather", "count 0 here|here, 0 on rank",
                     [](sieveComm_t c, bool odd, float* a, float* b) {
                       return sieveAllGather(a, b, odd ? 0 : 5003, sieveFloat32, c, nullptr);
                     }},
        MismatchCase{"ReduceScatter", "count 0 here|here, 0 on rank",
                     [](sieveComm_t c, bool odd, float* a, float* b) {
                       return sieveReduceScatter(a, b, odd ? 0 : 5003, sieveFloat32, sieveSum, c,
                                                 nullptr);
                     }},
        // NULL buffers with count 0 are valid and still join.
        MismatchCase{"AllReduceNull", "count 0 here|here, 0 on rank",
                     [](sieveComm_t c, bool odd, float* a, float* b) {
                       return odd ? AllReduce(c, 0, sieveFloat32, sieveSum, nullptr, nullptr)
                                  : AllReduce(c, 5003, sieveFloat32, sieveSum, a, b);
                     }},
        MismatchCase{"Ternary", "count 0 here|here, 0 on rank",
                     [](sieveComm_t c, bool odd, float* a, float* b) {
                       return Ternary(c, 7, a, b, odd ? 0 : 5003);
                     },
                     nullptr, nullptr, "max"},
        MismatchCase{"Masked", "count 0 here|here, 0 on rank",
                     [](sieveComm_t c, bool odd, float* a, float* b) {
                       return WithMasks(c, 5003, [&](sieveMask_t full, sieveMask_t none) {
                         return sieveAllReduceMasked(a, b, odd ? 0 : 5003, sieveFloat32, sieveSum,
                                                     odd ? none : full, c, nullptr);
                       });
                     }},
        MismatchCase{"MaskedTernary", "count 0 here|here, 0 on rank",
                     [](sieveComm_t c, bool odd, float* a, float* b) {
                       return WithMasks(c, 5003, [&](sieveMask_t full, sieveMask_t none) {
                         return Ternary(c, 7, a, b, odd ? 0 : 5003, 256, odd ? none : full);
                       });
                     }},
        MismatchCase{"Quantized", "count 0 here|here, 0 on rank",
                     [](sieveComm_t c, bool odd, float* a, float* b) {
                       sieveTernaryParams_t p = {};
                       p.seed = 7;
                       p.block_size = 256;
                       return sieveAllReduceQuantized(a, b, odd ? 0 : 5003, sieveFloat32,
                                                      sieveSum, 7, &p, c, nullptr);
                     },
                     nullptr, nullptr, "max"},
        MismatchCase{"QuantizedReduceScatter", "count 0 here|here, 0 on rank",
                     [](sieveComm_t c, bool odd, float* a, float* b) {
                       sieveTernaryParams_t p = {};
                       p.seed = 7;
                       p.block_size = 256;
                       return sieveReduceScatterQuantized(a, b, odd ? 0 : 5003, sieveFloat32,
                                                          sieveAvg, 3, &p, c, nullptr);
                     },
                     nullptr, nullptr, "max"},
        MismatchCase{"QuantizedAllGather", "count 0 here|here, 0 on rank",
                     [](sieveComm_t c, bool odd, float* a, float* b) {
                       return sieveAllGatherQuantized(a, b, odd ? 0 : 5003, sieveFloat32, 8, c,
                                                      nullptr);
                     }},
        MismatchCase{"TopK", "count 0 here|here, 0 on rank",
                     [](sieveComm_t c, bool odd, float* a, float* b) {
                       return sieveAllReduceTopK(a, b, odd ? 0 : 5003, sieveFloat32, sieveSum,
                                                 0.01, 0, c, nullptr);
                     }},
        // Inside a group, with a matching call before it.
        MismatchCase{"Grouped", "count 0 here|here, 0 on rank",
                     [](sieveComm_t c, bool odd, float* a, float* b) {
                       sieveGroupStart();
                       AllReduce(c, 16, sieveFloat32, sieveSum, a, b);
                       AllReduce(c, odd ? 0 : 5003, sieveFloat32, sieveSum, a + 16, b + 16);
                       return sieveGroupEnd();
                     }}),
    [](const testing::TestParamInfo<MismatchCase>& info) { return info.param.name; });

}  // namespace
}  // namespace sieve_test
