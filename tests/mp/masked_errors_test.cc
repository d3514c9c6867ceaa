// Mask agreement and misuse: a strict mismatch fails on every rank naming the
// rank that differs and leaves the communicator usable; the union policy
// reduces over the OR of the masks; freed, foreign or mismatched handles and
// counts are errors, not crashes.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "support/mask_reference.h"
#include "support/mp_harness.h"
#include "support/reference.h"

namespace sieve_test {
namespace {

// One rank flips one bit of a shared mask.
int RunStrictMismatch(int rank, int n, const sieveUniqueId& id) {
  sieveComm_t comm = nullptr;
  RANK_CHECK(InitComm(rank, n, id, &comm) == 0, "%s", sieveGetLastError(nullptr));
  std::vector<uint8_t> mask = RandomMask(3, 1001, 0.5);
  if (rank == n - 1) mask[517] ^= 1;
  std::vector<uint8_t> bits = ToBitmap(mask);
  sieveMask_t handle = nullptr;
  sieveResult_t res =
      sieveMaskRegister(comm, bits.data(), sieveMaskBitmap, mask.size(), sieveMaskStrict, &handle);
  RANK_CHECK(res == sieveInvalidUsage, "register returned %d", res);
  std::string msg = sieveGetLastError(comm);
  std::string who = "rank(s) " + std::to_string(n - 1) + " differs";
  RANK_CHECK(msg.find(who) != std::string::npos, "message '%s' lacks '%s'", msg.c_str(),
             who.c_str());
  sieveCounters_t c{};
  RANK_CHECK(sieveCommGetCounters(comm, &c) == sieveSuccess && c.mask_mismatches == 1,
             "mask_mismatches %llu", (unsigned long long)c.mask_mismatches);
  // The communicator still works: a dense all-reduce and a matching registration.
  std::vector<int32_t> v(33, rank + 1);
  RANK_CHECK(sieveAllReduce(v.data(), v.data(), v.size(), sieveInt32, sieveSum, comm, nullptr) ==
             sieveSuccess, "%s", sieveGetLastError(comm));
  RANK_CHECK(v[0] == n * (n + 1) / 2, "sum %d", v[0]);
  mask[517] = 1;
  RANK_CHECK(sieveMaskRegister(comm, mask.data(), sieveMaskBytes, mask.size(), sieveMaskStrict,
                               &handle) == sieveSuccess, "%s", sieveGetLastError(comm));
  RANK_CHECK(sieveMaskDeregister(handle) == sieveSuccess, "deregister");
  RANK_CHECK(sieveCommDestroy(comm) == sieveSuccess, "destroy");
  return 0;
}

TEST(MaskedAgreementTest, StrictMismatchNamesTheRankOnEveryRankAndCommStaysUsable) {
  RankSpec spec;
  spec.nranks = 3;
  spec.kill_after_s = 30;
  spec.env = {{"SIEVE_TIMEOUT", "10"}};
  EXPECT_EQ(RunRanks(spec, RunStrictMismatch), "");
}

// Every rank passes its own mask; the result uses their OR.
int RunUnion(int rank, int n, const sieveUniqueId& id) {
  sieveComm_t comm = nullptr;
  RANK_CHECK(InitComm(rank, n, id, &comm) == 0, "%s", sieveGetLastError(nullptr));
  const size_t count = 2049;
  std::vector<uint8_t> mine = RandomMask(100 + rank, count, 0.1), all(count, 0);
  for (int r = 0; r < n; ++r) {
    std::vector<uint8_t> m = RandomMask(100 + r, count, 0.1);
    for (size_t j = 0; j < count; ++j) all[j] |= m[j];
  }
  sieveMask_t handle = nullptr;
  RANK_CHECK(sieveMaskRegister(comm, mine.data(), sieveMaskBytes, count, sieveMaskUnion,
                               &handle) == sieveSuccess, "%s", sieveGetLastError(comm));
  size_t nnz = 0;
  RANK_CHECK(sieveMaskNnz(handle, &nnz) == sieveSuccess && nnz == Nnz(all), "nnz %zu vs %zu",
             nnz, Nnz(all));
  std::vector<double> in(count), out(count), expected(count);
  FillInput(11, rank, sieveFloat64, sieveSum, 0, count, in.data());
  RANK_CHECK(sieveAllReduceMasked(in.data(), out.data(), count, sieveFloat64, sieveSum, handle,
                                  comm, nullptr) == sieveSuccess, "%s", sieveGetLastError(comm));
  ExpectedMasked(11, n, sieveFloat64, sieveSum, all, expected.data());
  size_t first = 0;
  size_t wrong = CountMismatches(out.data(), expected.data(), count, 8, &first);
  RANK_CHECK(wrong == 0, "%zu wrong (first %zu)", wrong, first);
  sieveCounters_t c{};
  RANK_CHECK(sieveCommGetCounters(comm, &c) == sieveSuccess && c.mask_mismatches == 1,
             "mask_mismatches %llu", (unsigned long long)c.mask_mismatches);
  RANK_CHECK(sieveMaskDeregister(handle) == sieveSuccess, "deregister");
  RANK_CHECK(sieveCommDestroy(comm) == sieveSuccess, "destroy");
  return 0;
}

TEST(MaskedAgreementTest, UnionPolicyReducesOverTheOrOfAllMasks) {
  RankSpec spec;
  spec.nranks = 4;
  EXPECT_EQ(RunRanks(spec, RunUnion), "");
}

// Counts that differ across ranks fail on every rank, whatever the policy.
int RunCountMismatch(int rank, int n, const sieveUniqueId& id) {
  sieveComm_t comm = nullptr;
  RANK_CHECK(InitComm(rank, n, id, &comm) == 0, "%s", sieveGetLastError(nullptr));
  std::vector<uint8_t> mask(100 + (rank == 1 ? 1 : 0), 1);
  sieveMask_t handle = nullptr;
  RANK_CHECK(sieveMaskRegister(comm, mask.data(), sieveMaskBytes, mask.size(), sieveMaskUnion,
                               &handle) == sieveInvalidUsage, "count mismatch accepted");
  RANK_CHECK(std::strstr(sieveGetLastError(comm), "count differs") != nullptr, "%s",
             sieveGetLastError(comm));
  RANK_CHECK(sieveCommDestroy(comm) == sieveSuccess, "destroy");
  return 0;
}

TEST(MaskedAgreementTest, CountMismatchFailsOnEveryRank) {
  RankSpec spec;
  spec.nranks = 3;
  spec.kill_after_s = 30;
  EXPECT_EQ(RunRanks(spec, RunCountMismatch), "");
}

// Two masks of the same count and the same number of kept elements: a rank
// passing the other one fails on every rank (masked, or masked ternary), naming
// the mask, instead of summing misaligned elements. (Before the masks' digests
// were in the fingerprint, both calls succeeded with wrong sums.)
int SameNnzDifferentMask(int rank, int n, const sieveUniqueId& id, bool ternary) {
  sieveComm_t comm = nullptr;
  RANK_CHECK(InitComm(rank, n, id, &comm) == 0, "%s", sieveGetLastError(nullptr));
  const size_t count = 1001;
  std::vector<uint8_t> a = RandomMask(5, count, 0.5), b(count);
  for (size_t j = 0; j < count; ++j) b[j] = a[(j + 1) % count];  // rotated: the same nnz
  sieveMask_t ha = nullptr, hb = nullptr;
  RANK_CHECK(sieveMaskRegister(comm, a.data(), sieveMaskBytes, count, sieveMaskStrict, &ha) ==
             sieveSuccess, "%s", sieveGetLastError(comm));
  RANK_CHECK(sieveMaskRegister(comm, b.data(), sieveMaskBytes, count, sieveMaskStrict, &hb) ==
             sieveSuccess, "%s", sieveGetLastError(comm));
  size_t nnz_a = 0, nnz_b = 0;
  RANK_CHECK(sieveMaskNnz(ha, &nnz_a) == sieveSuccess && sieveMaskNnz(hb, &nnz_b) == sieveSuccess &&
             nnz_a == nnz_b, "nnz %zu and %zu", nnz_a, nnz_b);
  sieveMask_t mine = rank == n - 1 ? hb : ha;
  std::vector<float> buf(count, 1.0f);
  const sieveTernaryParams_t p = {1, 2, 0, mine, 0};
  sieveResult_t r =
      ternary ? sieveAllReduceTernary(buf.data(), buf.data(), count, sieveFloat32, sieveSum, &p,
                                      comm, nullptr)
              : sieveAllReduceMasked(buf.data(), buf.data(), count, sieveFloat32, sieveSum, mine,
                                     comm, nullptr);
  RANK_CHECK(r == sieveInvalidUsage, "different masks returned %d", r);
  const char* want = ternary ? "seed, step or mask" : "which elements it keeps";
  RANK_CHECK(std::strstr(sieveGetLastError(comm), want) != nullptr, "%s",
             sieveGetLastError(comm));
  RANK_CHECK(sieveMaskDeregister(ha) == sieveSuccess && sieveMaskDeregister(hb) == sieveSuccess,
             "deregister");
  RANK_CHECK(sieveCommDestroy(comm) == sieveSuccess, "destroy");
  return 0;
}

TEST(MaskedAgreementTest, SameNnzDifferentMaskFailsOnEveryRank) {
  RankSpec spec;
  spec.nranks = 3;
  spec.kill_after_s = 30;
  spec.env = {{"SIEVE_TIMEOUT", "10"}};
  EXPECT_EQ(RunRanks(spec, [](int rank, int n, const sieveUniqueId& id) {
              return SameNnzDifferentMask(rank, n, id, false);
            }), "");
  EXPECT_EQ(RunRanks(spec, [](int rank, int n, const sieveUniqueId& id) {
              return SameNnzDifferentMask(rank, n, id, true);
            }), "");
}

// Misuse of handles and arguments; count 0 and nnz 0.
int RunMisuse(int rank, int n, const sieveUniqueId& id) {
  sieveComm_t comm = nullptr;
  RANK_CHECK(InitComm(rank, n, id, &comm) == 0, "%s", sieveGetLastError(nullptr));
  std::vector<uint8_t> none(77, 0);
  sieveMask_t handle = nullptr, empty = nullptr;
  RANK_CHECK(sieveMaskRegister(comm, none.data(), sieveMaskBytes, 77, sieveMaskStrict,
                               &handle) == sieveSuccess, "%s", sieveGetLastError(comm));
  RANK_CHECK(sieveMaskRegister(comm, nullptr, sieveMaskBitmap, 0, sieveMaskStrict, &empty) ==
             sieveSuccess, "%s", sieveGetLastError(comm));
  std::vector<float> buf(77, 3.0f);
  RANK_CHECK(sieveAllReduceMasked(buf.data(), buf.data(), 77, sieveFloat32, sieveSum, handle,
                                  comm, nullptr) == sieveSuccess, "%s", sieveGetLastError(comm));
  for (float v : buf) RANK_CHECK(v == 0.0f, "nnz 0 left %f", v);
  RANK_CHECK(sieveAllReduceMasked(nullptr, nullptr, 0, sieveFloat32, sieveSum, empty, comm,
                                  nullptr) == sieveSuccess, "%s", sieveGetLastError(comm));
  RANK_CHECK(sieveAllReduceMasked(buf.data(), buf.data(), 76, sieveFloat32, sieveSum, handle,
                                  comm, nullptr) == sieveInvalidArgument, "wrong count accepted");
  RANK_CHECK(std::strstr(sieveGetLastError(comm), "registered for") != nullptr, "%s",
             sieveGetLastError(comm));
  RANK_CHECK(sieveMaskRegister(comm, none.data(), static_cast<sieveMaskFormat_t>(7), 77,
                               sieveMaskStrict, &handle) == sieveInvalidArgument, "bad format");
  int foreign[8] = {0};
  sieveMask_t bogus = reinterpret_cast<sieveMask_t>(foreign);
  size_t nnz = 0;
  RANK_CHECK(sieveMaskNnz(bogus, &nnz) == sieveInvalidArgument, "foreign handle accepted");
  RANK_CHECK(sieveMaskDeregister(handle) == sieveSuccess, "deregister");
  RANK_CHECK(sieveMaskDeregister(handle) == sieveInvalidArgument, "double deregister accepted");
  RANK_CHECK(sieveAllReduceMasked(buf.data(), buf.data(), 77, sieveFloat32, sieveSum, handle,
                                  comm, nullptr) == sieveInvalidArgument, "freed handle accepted");
  RANK_CHECK(std::strstr(sieveGetLastError(comm), "not a registered mask") != nullptr, "%s",
             sieveGetLastError(comm));
  RANK_CHECK(sieveMaskDeregister(empty) == sieveSuccess, "deregister");
  RANK_CHECK(sieveCommDestroy(comm) == sieveSuccess, "destroy");
  return 0;
}

TEST(MaskedMisuseTest, FreedForeignAndMismatchedUseAreErrors) {
  RankSpec spec;
  spec.nranks = 2;
  EXPECT_EQ(RunRanks(spec, RunMisuse), "");
}

}  // namespace
}  // namespace sieve_test
