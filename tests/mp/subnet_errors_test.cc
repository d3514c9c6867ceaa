// Subnet layouts misused: a layout that differs across ranks fails on every
// rank naming the ranks; an invalid layout on one rank fails everywhere (that
// rank with its reason); bad arguments, freed handles, unsupported types and
// non-holder contributions are errors with messages; a schedule that differs
// across ranks is caught with SIEVE_CHECK_SCHEDULE=1. The communicator stays
// usable after each.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "support/mp_harness.h"
#include "support/subnet_reference.h"

namespace sieve_test {
namespace {

bool Mentions(sieveComm_t comm, const std::string& what) {
  std::string msg = sieveGetLastError(comm);
  if (msg.find(what) != std::string::npos) return true;
  std::fprintf(stderr, "message '%s' lacks '%s'\n", msg.c_str(), what.c_str());
  return false;
}

// A two-segment layout over 10 elements: [0,4) held by everyone, [4,10) by rank 0.
TestLayout SmallLayout(int n) {
  TestLayout layout = {{0, 4, {}}, {4, 6, {0}}};
  for (int r = 0; r < n; ++r) layout[0].holders.push_back(r);
  return layout;
}

// Still usable: a matching registration and a call succeed.
int CheckUsable(sieveComm_t comm, int n) {
  TestLayout layout = SmallLayout(n);
  std::vector<sieveSegment_t> segs = ToApi(layout);
  sieveLayout_t h = nullptr;
  RANK_CHECK(sieveLayoutRegister(comm, 10, segs.data(), 2, &h) == sieveSuccess, "%s",
             sieveGetLastError(comm));
  std::vector<float> v(10, 1.0f);
  RANK_CHECK(
      sieveAllReduceSubnet(v.data(), v.data(), 10, sieveFloat32, h, comm, nullptr) == sieveSuccess,
      "%s", sieveGetLastError(comm));
  RANK_CHECK(v[0] == 1.0f, "average of ones %f", v[0]);
  RANK_CHECK(sieveLayoutDeregister(h) == sieveSuccess, "deregister");
  return 0;
}

int RunMismatch(int rank, int n, const sieveUniqueId& id) {
  sieveComm_t comm = nullptr;
  RANK_CHECK(InitComm(rank, n, id, &comm) == 0, "%s", sieveGetLastError(nullptr));
  sieveLayout_t h = nullptr;
  // The last rank's second segment is held by rank 1 instead of rank 0.
  TestLayout layout = SmallLayout(n);
  if (rank == n - 1) layout[1].holders = {1};
  std::vector<sieveSegment_t> segs = ToApi(layout);
  RANK_CHECK(sieveLayoutRegister(comm, 10, segs.data(), 2, &h) == sieveInvalidUsage, "mismatch");
  RANK_CHECK(Mentions(comm, "rank(s) " + std::to_string(n - 1)) && Mentions(comm, "layout"),
             "holders");
  // Another count on rank 1 (with a valid layout for it).
  TestLayout longer = SmallLayout(n);
  if (rank == 1) longer[1].length = 7;
  segs = ToApi(longer);
  RANK_CHECK(
      sieveLayoutRegister(comm, rank == 1 ? 11 : 10, segs.data(), 2, &h) == sieveInvalidUsage,
      "count");
  RANK_CHECK(Mentions(comm, "count differs") && Mentions(comm, "rank(s) 1"), "count");
  // An invalid layout on rank 0 only (a gap): rank 0 says why, the others name it.
  TestLayout gap = SmallLayout(n);
  if (rank == 0) gap[1].offset = 5;
  segs = ToApi(gap);
  sieveResult_t res = sieveLayoutRegister(comm, 10, segs.data(), 2, &h);
  RANK_CHECK(res == (rank == 0 ? sieveInvalidArgument : sieveInvalidUsage), "gap %d", res);
  RANK_CHECK(rank == 0 ? Mentions(comm, "segment 1 starts at element 5")
                       : Mentions(comm, "rank(s) 0 is invalid"),
             "gap");
  RANK_CHECK(CheckUsable(comm, n) == 0, "usable");
  RANK_CHECK(sieveCommDestroy(comm) == sieveSuccess, "destroy");
  return 0;
}

TEST(SubnetAgreementTest, MismatchedOrInvalidLayoutFailsOnEveryRankNamingTheRanks) {
  RankSpec spec;
  spec.nranks = 3;
  spec.kill_after_s = 40;
  spec.env = {{"SIEVE_TIMEOUT", "10"}};
  EXPECT_EQ(RunRanks(spec, RunMismatch), "");
}

// Argument errors that each rank detects alone (every rank makes the same mistake).
int RunBadArguments(int rank, int n, const sieveUniqueId& id) {
  sieveComm_t comm = nullptr;
  RANK_CHECK(InitComm(rank, n, id, &comm) == 0, "%s", sieveGetLastError(nullptr));
  TestLayout layout = SmallLayout(n);
  std::vector<sieveSegment_t> segs = ToApi(layout);
  sieveLayout_t h = nullptr;
  RANK_CHECK(sieveLayoutRegister(comm, 10, nullptr, 2, &h) == sieveInvalidArgument &&
                 Mentions(comm, "segments is NULL"),
             "null segments");
  RANK_CHECK(sieveLayoutRegister(comm, 10, segs.data(), 2, nullptr) == sieveInvalidArgument,
             "null handle");
  // Content errors go through agreement: every rank reports its own reason.
  std::vector<int> unsorted = {1, 0};
  std::vector<sieveSegment_t> bad = segs;
  bad[0].holders = unsorted.data();
  bad[0].nholders = 2;
  RANK_CHECK(sieveLayoutRegister(comm, 10, bad.data(), 2, &h) == sieveInvalidArgument &&
                 Mentions(comm, "ascending"),
             "unsorted holders");
  bad = segs;
  bad[1].nholders = 0;
  RANK_CHECK(sieveLayoutRegister(comm, 10, bad.data(), 2, &h) == sieveInvalidArgument &&
                 Mentions(comm, "nholders 0"),
             "no holders");
  std::vector<int> outside = {n};
  bad = segs;
  bad[1].holders = outside.data();
  RANK_CHECK(sieveLayoutRegister(comm, 10, bad.data(), 2, &h) == sieveInvalidArgument &&
                 Mentions(comm, "not a rank"),
             "holder out of range");
  RANK_CHECK(sieveLayoutRegister(comm, 12, segs.data(), 2, &h) == sieveInvalidArgument &&
                 Mentions(comm, "partition"),
             "short of count");
  RANK_CHECK(sieveLayoutEqualSubnets(comm, 3, 4, &h) == sieveInvalidArgument &&
                 Mentions(comm, "nsubnets 4"),
             "more subnets than elements");
  std::vector<unsigned char> matrix(static_cast<size_t>(n) * 3, 0);
  matrix[0] = matrix[1] = 1;  // block 2 held by nobody
  RANK_CHECK(sieveLayoutFromMaskMatrix(comm, matrix.data(), 3, 4, 10, &h) == sieveInvalidArgument &&
                 Mentions(comm, "block 2"),
             "block without holder");
  RANK_CHECK(sieveLayoutFromMaskMatrix(comm, matrix.data(), 2, 4, 10, &h) == sieveInvalidArgument &&
                 Mentions(comm, "nblocks 2"),
             "wrong nblocks");
  RANK_CHECK(sieveGroupStart() == sieveSuccess, "group");
  RANK_CHECK(
      sieveLayoutEqualSubnets(comm, 10, 2, &h) == sieveInvalidUsage && Mentions(comm, "group"),
      "inside a group");
  RANK_CHECK(sieveGroupEnd() == sieveSuccess, "group end");

  RANK_CHECK(sieveLayoutRegister(comm, 10, segs.data(), 2, &h) == sieveSuccess, "%s",
             sieveGetLastError(comm));
  std::vector<float> f(10, 1.0f);
  std::vector<int32_t> ints(10, 1);
  RANK_CHECK(sieveAllReduceSubnet(ints.data(), ints.data(), 10, sieveInt32, h, comm, nullptr) ==
                     sieveInvalidArgument &&
                 Mentions(comm, "int32 is not supported"),
             "int32");
  RANK_CHECK(sieveAllReduceSubnet(f.data(), f.data(), 9, sieveFloat32, h, comm, nullptr) ==
                     sieveInvalidArgument &&
                 Mentions(comm, "count 9"),
             "count");
  RANK_CHECK(sieveAllReduceSubnet(nullptr, f.data(), 10, sieveFloat32, h, comm, nullptr) ==
                     sieveInvalidArgument &&
                 Mentions(comm, "sendbuff"),
             "null sendbuff");
  RANK_CHECK(sieveAllReduceSubnet(f.data(), f.data(), 10, sieveFloat32, nullptr, comm, nullptr) ==
                     sieveInvalidArgument &&
                 Mentions(comm, "layout is NULL"),
             "null layout");
  RANK_CHECK(sieveAllReduceD2ft(f.data(), f.data(), 10, sieveFloat32, h, nullptr, nullptr, comm,
                                nullptr) == sieveInvalidArgument &&
                 Mentions(comm, "both NULL"),
             "no bitmap");
  // Every rank marks segment 1, which only rank 0 holds: all fail, naming rank 1.
  unsigned char both = 3;
  RANK_CHECK(sieveAllReduceD2ft(f.data(), f.data(), 10, sieveFloat32, h, &both, nullptr, comm,
                                nullptr) == sieveInvalidArgument &&
                 Mentions(comm, "rank 1 marked segment 1"),
             "non-holder contribution");
  // A row that disagrees with the table passed alongside it.
  std::vector<unsigned char> table(static_cast<size_t>(n), 1);
  unsigned char two = 2;
  RANK_CHECK(sieveAllReduceD2ft(f.data(), f.data(), 10, sieveFloat32, h, &two, table.data(), comm,
                                nullptr) == sieveInvalidArgument &&
                 Mentions(comm, "touched differs"),
             "row vs table");
  RANK_CHECK(sieveLayoutDeregister(h) == sieveSuccess, "deregister");
  RANK_CHECK(sieveLayoutDeregister(h) == sieveInvalidArgument &&
                 Mentions(nullptr, "not a registered layout"),
             "double deregister");
  int k = 0;
  RANK_CHECK(sieveLayoutNumSegments(h, &k) == sieveInvalidArgument, "freed handle");
  RANK_CHECK(sieveAllReduceSubnet(f.data(), f.data(), 10, sieveFloat32, h, comm, nullptr) ==
                     sieveInvalidArgument &&
                 Mentions(comm, "not a registered layout"),
             "freed use");
  RANK_CHECK(CheckUsable(comm, n) == 0, "usable");
  RANK_CHECK(sieveCommDestroy(comm) == sieveSuccess, "destroy");
  return 0;
}

TEST(SubnetArgumentsTest, BadArgumentsAreErrorsWithMessages) {
  RankSpec spec;
  spec.nranks = 2;
  spec.kill_after_s = 40;
  spec.env = {{"SIEVE_TIMEOUT", "10"}};
  EXPECT_EQ(RunRanks(spec, RunBadArguments), "");
}

// With SIEVE_CHECK_SCHEDULE=1 a table that differs on one rank fails on every rank.
int RunScheduleCheck(int rank, int n, const sieveUniqueId& id) {
  sieveComm_t comm = nullptr;
  RANK_CHECK(InitComm(rank, n, id, &comm) == 0, "%s", sieveGetLastError(nullptr));
  sieveLayout_t h = nullptr;
  RANK_CHECK(sieveLayoutEqualSubnets(comm, 100, 10, &h) == sieveSuccess, "%s",
             sieveGetLastError(comm));
  std::vector<unsigned char> table(static_cast<size_t>(n) * 2, 0xff);
  std::vector<float> f(100, static_cast<float>(rank));
  RANK_CHECK(sieveAllReduceD2ft(f.data(), f.data(), 100, sieveFloat32, h, nullptr, table.data(),
                                comm, nullptr) == sieveSuccess,
             "%s", sieveGetLastError(comm));
  RANK_CHECK(f[0] == static_cast<float>(n - 1) / 2, "average %f", f[0]);
  if (rank == 2) table[1] = 0;  // rank 0 untouched segments 8, 9 -- in rank 2's copy only
  RANK_CHECK(sieveAllReduceD2ft(f.data(), f.data(), 100, sieveFloat32, h, nullptr, table.data(),
                                comm, nullptr) == sieveInvalidUsage &&
                 Mentions(comm, "rank(s) 2") && Mentions(comm, "schedule"),
             "mismatch");
  RANK_CHECK(sieveLayoutDeregister(h) == sieveSuccess, "deregister");
  RANK_CHECK(CheckUsable(comm, n) == 0, "usable");
  RANK_CHECK(sieveCommDestroy(comm) == sieveSuccess, "destroy");
  return 0;
}

TEST(SubnetScheduleCheckTest, DifferingTableFailsOnEveryRankWhenChecked) {
  RankSpec spec;
  spec.nranks = 3;
  spec.kill_after_s = 40;
  spec.env = {{"SIEVE_TIMEOUT", "10"}, {"SIEVE_CHECK_SCHEDULE", "1"}};
  EXPECT_EQ(RunRanks(spec, RunScheduleCheck), "");
}

// A holder that dies: the others' subnet call fails with sieveRemoteError
// naming it, within the timeout, while their other group completes.
int RunDeadHolder(int rank, int n, const sieveUniqueId& id) {
  sieveComm_t comm = nullptr;
  RANK_CHECK(InitComm(rank, n, id, &comm) == 0, "%s", sieveGetLastError(nullptr));
  TestLayout layout = {{0, 100000, {0, 1, 2}}, {100000, 100000, {0, 1}}};
  std::vector<sieveSegment_t> segs = ToApi(layout);
  sieveLayout_t h = nullptr;
  RANK_CHECK(sieveLayoutRegister(comm, 200000, segs.data(), 2, &h) == sieveSuccess, "%s",
             sieveGetLastError(comm));
  if (rank == 2) {
    std::fflush(nullptr);
    _exit(0);  // gone without a word
  }
  std::vector<float> v(200000, 1.0f);
  auto start = std::chrono::steady_clock::now();
  sieveResult_t res =
      sieveAllReduceSubnet(v.data(), v.data(), v.size(), sieveFloat32, h, comm, nullptr);
  double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  RANK_CHECK(res == sieveRemoteError, "returned %d: %s", res, sieveGetLastError(comm));
  RANK_CHECK(Mentions(comm, "rank 2"), "names the dead rank");
  RANK_CHECK(took < 15, "took %.1f s", took);
  sieveLayoutDeregister(h);
  sieveCommAbort(comm);
  return 0;
}

TEST(SubnetFailureTest, DeadHolderIsARemoteErrorNamingItWithinTheTimeout) {
  RankSpec spec;
  spec.nranks = 3;
  spec.kill_after_s = 40;
  spec.env = {{"SIEVE_TIMEOUT", "5"}};
  EXPECT_EQ(RunRanks(spec, RunDeadHolder), "");
}

}  // namespace
}  // namespace sieve_test
