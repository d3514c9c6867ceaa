// Agreement and mismatch detection, driven by SIEVE_FAULT and by ranks that
// deliberately call different collectives:
//  - when one rank's operation fails (a receive fails, a message is dropped,
//    truncated or corrupted, a connection cannot be made) every rank reports
//    an error for that sequence number: none reports success;
//  - ranks that differ in collective, count, datatype, op, root, algorithm,
//    segment size or ternary parameters all get sieveInvalidUsage naming the
//    field, and the communicator is unusable afterwards.
#include <gtest/gtest.h>

#include <cstdio>
#include <functional>
#include <string>
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
};

class AgreementTest : public testing::TestWithParam<AgreementCase> {};

// 4 ranks, one 4 MiB all-reduce: ring chunks of 1 MiB in 2 segments of 512 KiB,
// so each rank sends and receives 12 data messages (6 steps x 2 segments).
TEST_P(AgreementTest, EveryRankReportsTheSameVerdict) {
  const AgreementCase& c = GetParam();
  SharedFaultBoard board;
  RankSpec spec;
  spec.nranks = 4;
  spec.kill_after_s = 60;
  spec.env = {{"SIEVE_TIMEOUT", c.timeout}, {"SIEVE_FAULT", c.fault}};
  std::string failures = RunRanks(spec, [&](int rank, int nranks, const sieveUniqueId& id) {
    sieveComm_t comm = nullptr;
    RANK_CHECK(sieveCommInitRank(&comm, nranks, id, rank) == sieveSuccess, "%s",
               sieveGetLastError(nullptr));
    const size_t count = size_t{1} << 20;
    std::vector<float> send(count, float(rank + 1)), recv(count);
    auto start = Clock::now();
    sieveResult_t res = sieveAllReduce(send.data(), recv.data(), count, sieveFloat32, sieveSum,
                                       comm, nullptr);
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
        // Rank 3's last receive (all-gather) fails: the others already hold everything.
        AgreementCase{"LastReceiveFails", "rank=3,on=recv,min=65536,nth=12,do=fail", "10"},
        // Rank 0's last send is swallowed: only rank 1 misses data, and times out.
        AgreementCase{"LastSendDropped", "rank=0,on=send,min=65536,nth=12,do=drop", "1"},
        // Rank 2's first send is cut short: rank 3 sees a size error.
        AgreementCase{"SendTruncated", "rank=2,on=send,min=65536,nth=1,do=truncate", "10"},
        // A flipped byte in rank 1's fingerprint to rank 0 (its datatype field).
        AgreementCase{"FingerprintCorrupted", "rank=1,on=send,size=48,nth=1,do=corrupt,byte=13",
                      "10"},
        // Rank 1 cannot connect to rank 2 (its ring successor).
        AgreementCase{"ConnectFails", "rank=1,on=connect,peer=2,do=fail", "10"}),
    [](const testing::TestParamInfo<AgreementCase>& info) { return info.param.name; });

// ---- Mismatch ----------------------------------------------------------------------------------

// One collective call; `odd` is true on the last rank, which calls something else.
using MismatchCall = std::function<sieveResult_t(sieveComm_t comm, bool odd, float* a, float* b)>;

struct MismatchCase {
  const char* name;
  const char* field;  // must appear in every rank's message
  MismatchCall call;
  const char* odd_env_name = nullptr;  // environment the odd rank sets before init
  const char* odd_env_value = nullptr;
};

class MismatchTest : public testing::TestWithParam<MismatchCase> {};

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
    EXPECT_NE(msg.find(c.field), std::string::npos) << "the message does not name " << c.field;
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

sieveResult_t Ternary(sieveComm_t comm, uint64_t seed, float* a, float* b) {
  sieveTernaryParams_t p = {};
  p.seed = seed;
  p.step = 3;
  p.block_size = 256;
  return sieveAllReduceTernary(a, b, 5003, sieveFloat32, sieveSum, &p, comm, nullptr);
}

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
        MismatchCase{"Algorithm", "SIEVE_ALGO",
                     [](sieveComm_t c, bool, float* a, float* b) {
                       return AllReduce(c, 5003, sieveFloat32, sieveSum, a, b);
                     },
                     "SIEVE_ALGO", "RING"},
        MismatchCase{"SegmentSize", "SIEVE_SEGMENT_BYTES",
                     [](sieveComm_t c, bool, float* a, float* b) {
                       return AllReduce(c, 4 * 5003, sieveFloat32, sieveSum, a, b);
                     },
                     "SIEVE_SEGMENT_BYTES", "4k"},
        MismatchCase{"TernarySeed", "mode parameters",
                     [](sieveComm_t c, bool odd, float* a, float* b) {
                       return Ternary(c, odd ? 8 : 7, a, b);
                     }}),
    [](const testing::TestParamInfo<MismatchCase>& info) { return info.param.name; });

}  // namespace
}  // namespace sieve_test
