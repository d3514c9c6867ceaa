// Misuse and hostile input (issue 22), in real processes: zero counts, overlapping buffers,
// send/recv size mismatches, sizes that would wrap, allocation bounds, destroyed handles,
// queued work of a destroyed communicator, and two threads on one communicator. Every case
// must end in an error code with a message that describes the call (naming the peer and the
// field where ranks differ), never a crash, a hang or a silently wrong result.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "support/fault_support.h"
#include "support/mp_harness.h"

namespace sieve_test {
namespace {

RankSpec Spec(int nranks) {
  RankSpec spec;
  spec.nranks = nranks;
  spec.kill_after_s = 60;
  spec.env = {{"SIEVE_TIMEOUT", "5"}};
  return spec;
}

bool Contains(const std::string& msg, const std::string& word) {
  return msg.find(word) != std::string::npos;
}

// Sum all-reduce of 16 floats (rank + 1 + i) checked against the reference: catches a
// communicator whose ranks no longer pair the same calls.
// `retry_refused`: a call refused because another thread was in a call on comm (a refused
// call takes no part in the sequence) is made again.
int CheckAllReduce16(sieveComm_t comm, int rank, int nranks, bool retry_refused = false) {
  float send[16], recv[16];
  for (int i = 0; i < 16; ++i) send[i] = float(rank + 1 + i);
  sieveResult_t res;
  while ((res = sieveAllReduce(send, recv, 16, sieveFloat32, sieveSum, comm, nullptr)) ==
             sieveInvalidUsage &&
         retry_refused && Contains(sieveGetLastError(nullptr), "another thread"))
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  RANK_CHECK(res == sieveSuccess, "%s", sieveGetLastError(comm));
  for (int i = 0; i < 16; ++i)
    RANK_CHECK(recv[i] == float(nranks * (nranks + 1) / 2 + nranks * i), "element %d is %g", i,
               double(recv[i]));
  return 0;
}

// ---- 1. Count 0 --------------------------------------------------------------------------------

// Every entry point with count 0 (NULL buffers) on every rank, alone and in a group: each takes
// part in the sequence, so the checked all-reduce after them still pairs correctly.
TEST(ZeroCount, EveryEntryPointJoinsTheSequence) {
  std::string failures = RunRanks(Spec(3), [](int rank, int nranks, const sieveUniqueId& id) {
    sieveComm_t comm = nullptr;
    RANK_CHECK(InitComm(rank, nranks, id, &comm) == 0, "%s", sieveGetLastError(nullptr));
    sieveMask_t none = nullptr;
    RANK_CHECK(sieveMaskRegister(comm, nullptr, sieveMaskBitmap, 0, sieveMaskStrict, &none) ==
                   sieveSuccess,
               "%s", sieveGetLastError(comm));
    sieveTernaryParams_t tp = {};
    auto all = [&]() -> bool {
      const int next = (rank + 1) % nranks, prev = (rank + nranks - 1) % nranks;
      bool ok = sieveAllReduce(nullptr, nullptr, 0, sieveFloat32, sieveSum, comm, nullptr) == 0;
      ok = ok && sieveBroadcast(nullptr, nullptr, 0, sieveInt8, 1, comm, nullptr) == 0;
      ok = ok && sieveReduce(nullptr, nullptr, 0, sieveFloat64, sieveMax, 2, comm, nullptr) == 0;
      ok = ok && sieveAllGather(nullptr, nullptr, 0, sieveInt32, comm, nullptr) == 0;
      ok = ok && sieveReduceScatter(nullptr, nullptr, 0, sieveBfloat16, sieveSum, comm, nullptr) == 0;
      ok = ok && sieveAllReduceMasked(nullptr, nullptr, 0, sieveFloat32, sieveSum, none, comm,
                                      nullptr) == 0;
      ok = ok && sieveAllReduceTernary(nullptr, nullptr, 0, sieveFloat32, sieveAvg, &tp, comm,
                                       nullptr) == 0;
      tp.mask = none;
      ok = ok && sieveAllReduceTernary(nullptr, nullptr, 0, sieveFloat32, sieveSum, &tp, comm,
                                       nullptr) == 0;
      tp.mask = nullptr;
      ok = ok && sieveAllReduceQuantized(nullptr, nullptr, 0, sieveFloat32, sieveSum, 7, &tp,
                                         comm, nullptr) == 0;
      ok = ok && sieveReduceScatterQuantized(nullptr, nullptr, 0, sieveFloat16, sieveAvg, 3, &tp,
                                             comm, nullptr) == 0;
      ok = ok && sieveAllGatherQuantized(nullptr, nullptr, 0, sieveFloat32, 4, comm, nullptr) == 0;
      ok = ok && sieveAllReduceTopK(nullptr, nullptr, 0, sieveFloat32, sieveSum, 0.01, 1, comm,
                                    nullptr) == 0;
      // A zero-byte ring exchange: every pair matches.
      ok = ok && sieveGroupStart() == 0;
      ok = ok && sieveSend(nullptr, 0, sieveFloat32, next, comm, nullptr) == 0;
      ok = ok && sieveRecv(nullptr, 0, sieveFloat32, prev, comm, nullptr) == 0;
      return sieveGroupEnd() == 0 && ok;
    };
    RANK_CHECK(all(), "ungrouped: %s", sieveGetLastError(comm));
    RANK_CHECK(sieveGroupStart() == sieveSuccess, "group");
    bool queued = all();
    RANK_CHECK(sieveGroupEnd() == sieveSuccess && queued, "grouped: %s", sieveGetLastError(comm));
    if (CheckAllReduce16(comm, rank, nranks) != 0) return 1;
    sieveMaskDeregister(none);
    RANK_CHECK(sieveCommDestroy(comm) == sieveSuccess, "destroy");
    return 0;
  });
  EXPECT_EQ(failures, "");
}

// ---- 1 and 11. Send/receive sizes --------------------------------------------------------------

// Rank 0 sends `sent` floats, rank 1 posts a receive of `posted`: the receiver fails with
// sieveInvalidUsage naming rank 0 and both sizes, the sender succeeds, and both communicators
// stay usable (the next exchange pairs correctly). A zero-byte send is posted like any other.
void CheckSizeMismatch(size_t sent, size_t posted) {
  std::string failures = RunRanks(Spec(2), [&](int rank, int nranks, const sieveUniqueId& id) {
    sieveComm_t comm = nullptr;
    RANK_CHECK(InitComm(rank, nranks, id, &comm) == 0, "%s", sieveGetLastError(nullptr));
    std::vector<float> buf(std::max(sent, posted) + 16, float(rank + 7));
    if (rank == 0) {
      sieveResult_t res = sieveSend(buf.data(), sent, sieveFloat32, 1, comm, nullptr);
      RANK_CHECK(res == sieveSuccess, "send of %zu: %d %s", sent, int(res),
                 sieveGetLastError(comm));
      for (int i = 0; i < 16; ++i) buf[i] = float(100 + i);
      RANK_CHECK(sieveSend(buf.data(), 16, sieveFloat32, 1, comm, nullptr) == sieveSuccess, "%s",
                 sieveGetLastError(comm));
    } else {
      sieveResult_t res = sieveRecv(buf.data(), posted, sieveFloat32, 0, comm, nullptr);
      std::string msg = sieveGetLastError(comm);
      std::fprintf(stderr, "receive of %zu against a send of %zu: %d %s\n", posted, sent, int(res),
                   msg.c_str());
      RANK_CHECK(res == sieveInvalidUsage, "receive of %zu against %zu returned %d", posted, sent,
                 int(res));
      RANK_CHECK(Contains(msg, "sieveRecv") && Contains(msg, "rank 0") &&
                     Contains(msg, std::to_string(sent * 4) + " bytes") &&
                     Contains(msg, std::to_string(posted * 4)),
                 "message: %s", msg.c_str());
      RANK_CHECK(sieveRecv(buf.data(), 16, sieveFloat32, 0, comm, nullptr) == sieveSuccess, "%s",
                 sieveGetLastError(comm));
      for (int i = 0; i < 16; ++i) RANK_CHECK(buf[i] == float(100 + i), "element %d", i);
    }
    if (CheckAllReduce16(comm, rank, nranks) != 0) return 1;
    RANK_CHECK(sieveCommDestroy(comm) == sieveSuccess, "destroy");
    return 0;
  });
  EXPECT_EQ(failures, "");
}

TEST(SendRecvSizes, ZeroByteSendPairsWithItsReceive) { CheckSizeMismatch(0, 16); }
TEST(SendRecvSizes, ZeroByteReceivePairsWithItsSend) { CheckSizeMismatch(16, 0); }
TEST(SendRecvSizes, ShorterSend) { CheckSizeMismatch(8, 16); }
TEST(SendRecvSizes, LongerSend) { CheckSizeMismatch(16, 8); }
// Past UCX's eager threshold (rendezvous protocol).
TEST(SendRecvSizes, LongerLargeSend) { CheckSizeMismatch(size_t{1} << 19, size_t{1} << 18); }

// ---- 2. Overlapping buffers -------------------------------------------------------------------

// Expects `res` to be sieveInvalidArgument with an "overlap" message naming `call`.
int ExpectOverlapRefused(sieveComm_t comm, const char* call, sieveResult_t res) {
  std::string msg = sieveGetLastError(comm);
  RANK_CHECK(res == sieveInvalidArgument, "%s returned %d: %s", call, int(res), msg.c_str());
  RANK_CHECK(Contains(msg, call) && Contains(msg, "overlap"), "%s: %s", call, msg.c_str());
  return 0;
}

// recvbuff = sendbuff + 1 element (before: success with 1021 of 1024 elements wrong) is refused by
// every collective; in place (NCCL's conventions) still works; the communicator stays usable.
TEST(Overlap, UnequalOverlapIsRefusedAndInPlaceWorks) {
  std::string failures = RunRanks(Spec(2), [](int rank, int nranks, const sieveUniqueId& id) {
    sieveComm_t comm = nullptr;
    RANK_CHECK(InitComm(rank, nranks, id, &comm) == 0, "%s", sieveGetLastError(nullptr));
    const size_t n = 1024;
    std::vector<float> buf(4 * n, 1.0f);
    float* b = buf.data();
    std::vector<unsigned char> keep(n, 1);
    sieveMask_t mask = nullptr;
    RANK_CHECK(sieveMaskRegister(comm, keep.data(), sieveMaskBytes, n, sieveMaskStrict, &mask) ==
                   sieveSuccess, "%s", sieveGetLastError(comm));
    sieveLayout_t layout = nullptr;
    RANK_CHECK(sieveLayoutEqualSubnets(comm, n, 4, &layout) == sieveSuccess, "%s",
               sieveGetLastError(comm));
    sieveTernaryParams_t tp = {};
    const unsigned char touched = 0x0f;
    if (ExpectOverlapRefused(comm, "sieveAllReduce",
                             sieveAllReduce(b, b + 1, n, sieveFloat32, sieveSum, comm, nullptr)) ||
        ExpectOverlapRefused(comm, "sieveAllReduce",
                             sieveAllReduce(b + 1, b, n, sieveFloat32, sieveSum, comm, nullptr)) ||
        // In place is recvbuff + rank * sendcount; plain sendbuff == recvbuff overlaps on rank 1.
        ExpectOverlapRefused(comm, "sieveAllGather",
                             sieveAllGather(b + (1 - rank) * n, b, n, sieveFloat32, comm, nullptr)) ||
        ExpectOverlapRefused(comm, "sieveReduceScatter",
                             sieveReduceScatter(b, b + (1 - rank) * n + 3, n, sieveFloat32,
                                                sieveSum, comm, nullptr)) ||
        ExpectOverlapRefused(comm, "sieveAllReduceMasked",
                             sieveAllReduceMasked(b, b + 7, n, sieveFloat32, sieveSum, mask, comm,
                                                  nullptr)) ||
        ExpectOverlapRefused(comm, "sieveAllReduceTernary",
                             sieveAllReduceTernary(b + 2, b, n, sieveFloat32, sieveSum, &tp, comm,
                                                   nullptr)) ||
        ExpectOverlapRefused(comm, "sieveAllReduceSubnet",
                             sieveAllReduceSubnet(b, b + 1, n, sieveFloat32, layout, comm,
                                                  nullptr)) ||
        ExpectOverlapRefused(comm, "sieveAllReduceD2ft",
                             sieveAllReduceD2ft(b, b + 1, n, sieveFloat32, layout, &touched,
                                                nullptr, comm, nullptr)))
      return 1;
    // In place, NCCL's way: all-gather from recvbuff + rank * n, reduce-scatter into
    // sendbuff + rank * n.
    for (size_t i = 0; i < 2 * n; ++i) b[i] = float(i / n == size_t(rank) ? rank + 1 : -1);
    RANK_CHECK(sieveAllGather(b + rank * n, b, n, sieveFloat32, comm, nullptr) == sieveSuccess,
               "%s", sieveGetLastError(comm));
    for (size_t i = 0; i < 2 * n; ++i) RANK_CHECK(b[i] == float(i / n + 1), "allgather %zu", i);
    for (size_t i = 0; i < 2 * n; ++i) b[i] = float(rank + 1);
    RANK_CHECK(sieveReduceScatter(b, b + rank * n, n, sieveFloat32, sieveSum, comm, nullptr) ==
                   sieveSuccess, "%s", sieveGetLastError(comm));
    for (size_t i = 0; i < n; ++i) RANK_CHECK(b[rank * n + i] == 3.0f, "reducescatter %zu", i);
    if (CheckAllReduce16(comm, rank, nranks) != 0) return 1;
    sieveMaskDeregister(mask);
    sieveLayoutDeregister(layout);
    RANK_CHECK(sieveCommDestroy(comm) == sieveSuccess, "destroy");
    return 0;
  });
  EXPECT_EQ(failures, "");
}

// Broadcast reads sendbuff on the root only, reduce writes recvbuff on the root only: the
// check applies there (one rank, so nobody waits for the refused call).
TEST(Overlap, RootOnlyBuffersAreCheckedOnTheRoot) {
  std::string failures = RunRanks(Spec(1), [](int rank, int nranks, const sieveUniqueId& id) {
    sieveComm_t comm = nullptr;
    RANK_CHECK(InitComm(rank, nranks, id, &comm) == 0, "%s", sieveGetLastError(nullptr));
    std::vector<double> buf(64, 1.0);
    double* b = buf.data();
    if (ExpectOverlapRefused(comm, "sieveBroadcast",
                             sieveBroadcast(b, b + 3, 32, sieveFloat64, 0, comm, nullptr)) ||
        ExpectOverlapRefused(comm, "sieveReduce",
                             sieveReduce(b + 3, b, 32, sieveFloat64, sieveMax, 0, comm, nullptr)))
      return 1;
    RANK_CHECK(sieveBroadcast(b, b + 32, 32, sieveFloat64, 0, comm, nullptr) == sieveSuccess, "%s",
               sieveGetLastError(comm));
    RANK_CHECK(sieveReduce(b, b, 32, sieveFloat64, sieveMax, 0, comm, nullptr) == sieveSuccess,
               "%s", sieveGetLastError(comm));
    RANK_CHECK(sieveCommDestroy(comm) == sieveSuccess, "destroy");
    return 0;
  });
  EXPECT_EQ(failures, "");
}

// ---- 6, 10 and 11. Sizes that would wrap, allocation bounds, counts in messages ----------------

int ExpectRefused(sieveComm_t comm, const char* what, sieveResult_t res, sieveResult_t want,
                  const std::vector<std::string>& words) {
  std::string msg = sieveGetLastError(comm);
  std::fprintf(stderr, "%s: %d %s\n", what, int(res), msg.c_str());
  RANK_CHECK(res == want, "%s returned %d, not %d: %s", what, int(res), int(want), msg.c_str());
  for (const std::string& w : words)
    RANK_CHECK(Contains(msg, w), "%s: \"%s\" does not say \"%s\"", what, msg.c_str(), w.c_str());
  return 0;
}

// Before: block_size near SIZE_MAX made count + block_size - 1 wrap (SIGSEGV on every rank), a
// mask count near SIZE_MAX wrapped the bitmap size (SIGSEGV), the byte-size message printed the
// wrapped product, a mask matrix with a block_size near SIZE_MAX computed 0 blocks, and
// sieveLayoutEqualSubnets allocated without bound (1.9 GB per rank for 10^7 subnets).
TEST(Sizes, WrappingAndUnboundedSizesAreRefusedWithTheirNumbers) {
  std::string failures = RunRanks(Spec(2), [](int rank, int nranks, const sieveUniqueId& id) {
    sieveComm_t comm = nullptr;
    RANK_CHECK(InitComm(rank, nranks, id, &comm) == 0, "%s", sieveGetLastError(nullptr));
    std::vector<float> a(64, 1.0f), b(64);
    sieveTernaryParams_t tp = {};
    tp.block_size = SIZE_MAX;
    const sieveResult_t kArg = sieveInvalidArgument;
    if (ExpectRefused(comm, "ternary block_size SIZE_MAX",
                      sieveAllReduceTernary(a.data(), b.data(), 64, sieveFloat32, sieveSum, &tp,
                                            comm, nullptr),
                      kArg, {"sieveAllReduceTernary", "block_size", std::to_string(SIZE_MAX)}))
      return 1;
    tp.block_size = size_t{1} << 34;  // the largest block: one block covers the buffer
    RANK_CHECK(sieveAllReduceTernary(a.data(), b.data(), 64, sieveFloat32, sieveSum, &tp, comm,
                                     nullptr) == sieveSuccess, "%s", sieveGetLastError(comm));
    sieveMask_t mask = nullptr;
    for (size_t count : {SIZE_MAX, SIZE_MAX - 7, (size_t{1} << 32) + 1})
      if (ExpectRefused(comm, "mask count",
                        sieveMaskRegister(comm, a.data(), sieveMaskBitmap, count, sieveMaskStrict,
                                          &mask),
                        kArg, {"sieveMaskRegister", std::to_string(count), "2^32"}))
        return 1;
    const size_t huge = SIZE_MAX / 4 + 1;  // x 2 ranks x 4 bytes wraps to 0
    if (ExpectRefused(comm, "all-gather byte size",
                      sieveAllGather(a.data(), b.data(), huge, sieveFloat32, comm, nullptr), kArg,
                      {"sieveAllGather", std::to_string(huge) + " x 2 ranks x 4 bytes"}))
      return 1;
    sieveLayout_t layout = nullptr;
    const auto start = Clock::now();
    if (ExpectRefused(comm, "10^7 equal subnets",
                      sieveLayoutEqualSubnets(comm, 100000000, 10000000, &layout), kArg,
                      {"sieveLayoutEqualSubnets", "10000000 segments", "limit"}))
      return 1;
    std::vector<int> holders = {0, 1};
    sieveSegment_t seg = {0, 16, holders.data(), 2};
    if (ExpectRefused(comm, "INT_MAX segments",
                      sieveLayoutRegister(comm, 16, &seg, INT32_MAX, &layout), kArg,
                      {"sieveLayoutRegister", "limit"}))
      return 1;
    RANK_CHECK(SecondsSince(start) < 3.0, "the refused layouts took %.1f s", SecondsSince(start));
    // One block of SIZE_MAX elements covers count 10: one segment, not a wrapped 0 blocks.
    const unsigned char matrix[2] = {1, 1};
    RANK_CHECK(sieveLayoutFromMaskMatrix(comm, matrix, 1, SIZE_MAX, 10, &layout) == sieveSuccess,
               "%s", sieveGetLastError(comm));
    int nseg = 0;
    RANK_CHECK(sieveLayoutNumSegments(layout, &nseg) == sieveSuccess && nseg == 1, "%d", nseg);
    sieveLayoutDeregister(layout);
    if (CheckAllReduce16(comm, rank, nranks) != 0) return 1;
    RANK_CHECK(sieveCommDestroy(comm) == sieveSuccess, "destroy");
    return 0;
  });
  EXPECT_EQ(failures, "");
}

// ---- 9. Mask policy ----------------------------------------------------------------------------

// Rank 2 registers with sieveMaskUnion, the others with sieveMaskStrict: every rank fails naming
// the policy and rank 2, and the communicator stays in step. Before, with differing masks the
// union rank ran an OR nobody joined (and every later call failed with an unrelated message);
// with equal masks the mixed policies went unnoticed.
TEST(MaskPolicy, MixedPoliciesFailOnEveryRankNamingTheRanks) {
  std::string failures = RunRanks(Spec(3), [](int rank, int nranks, const sieveUniqueId& id) {
    sieveComm_t comm = nullptr;
    RANK_CHECK(InitComm(rank, nranks, id, &comm) == 0, "%s", sieveGetLastError(nullptr));
    const sieveMaskPolicy_t policy = rank == 2 ? sieveMaskUnion : sieveMaskStrict;
    for (bool same_mask : {false, true}) {
      std::vector<unsigned char> keep(100, 0);
      keep[same_mask ? 0 : rank] = 1;
      sieveMask_t mask = nullptr;
      sieveResult_t res = sieveMaskRegister(comm, keep.data(), sieveMaskBytes, 100, policy, &mask);
      if (ExpectRefused(comm, same_mask ? "mixed policies, same mask" : "mixed policies",
                        res, sieveInvalidUsage, {"sieveMaskRegister", "policy", "rank(s) 2",
                                                 "sieveMaskStrict", "sieveMaskUnion"}))
        return 1;
      if (CheckAllReduce16(comm, rank, nranks) != 0) return 1;
    }
    RANK_CHECK(sieveCommDestroy(comm) == sieveSuccess, "destroy");
    return 0;
  });
  EXPECT_EQ(failures, "");
}

// ---- 5. Destroy or abort with calls queued in an open group ------------------------------------

// Each rank queues an all-reduce on a split communicator `doomed` and one on `comm`, ends
// `doomed` (destroy, abort, or abort from another thread), then ends the group: before, a
// SIGSEGV (the queued call read the freed communicator). Now the doomed call is dropped,
// sieveGroupEnd says so, the other call ran and is right.
void CheckEndedInGroup(const char* how) {
  std::string failures = RunRanks(Spec(2), [&](int rank, int nranks, const sieveUniqueId& id) {
    sieveComm_t comm = nullptr, doomed = nullptr;
    RANK_CHECK(InitComm(rank, nranks, id, &comm) == 0, "%s", sieveGetLastError(nullptr));
    RANK_CHECK(sieveCommSplit(comm, 0, rank, &doomed) == sieveSuccess, "%s",
               sieveGetLastError(comm));
    float send[16], recv[16], lost[16] = {};
    for (int i = 0; i < 16; ++i) send[i] = float(rank + 1 + i);
    RANK_CHECK(sieveGroupStart() == sieveSuccess, "group");
    RANK_CHECK(sieveAllReduce(lost, lost, 16, sieveFloat32, sieveSum, doomed, nullptr) ==
                   sieveSuccess, "%s", sieveGetLastError(doomed));
    RANK_CHECK(sieveAllReduce(send, recv, 16, sieveFloat32, sieveSum, comm, nullptr) ==
                   sieveSuccess, "%s", sieveGetLastError(comm));
    const std::string way = how;
    if (way == "destroy") {
      RANK_CHECK(sieveCommDestroy(doomed) == sieveSuccess, "destroy");
    } else if (way == "abort") {
      RANK_CHECK(sieveCommAbort(doomed) == sieveSuccess, "abort");
    } else {
      std::thread([doomed] { sieveCommAbort(doomed); }).join();
    }
    sieveResult_t res = sieveGroupEnd();
    std::string msg = sieveGetLastError(nullptr);
    std::fprintf(stderr, "rank %d, %s: group end %d: %s\n", rank, how, int(res), msg.c_str());
    RANK_CHECK(res == sieveInvalidUsage, "sieveGroupEnd returned %d", int(res));
    RANK_CHECK(Contains(msg, "sieveGroupEnd") && Contains(msg, "1 call(s)") &&
                   Contains(msg, "dropped"), "%s", msg.c_str());
    for (int i = 0; i < 16; ++i)
      RANK_CHECK(recv[i] == float(3 + 2 * i) && lost[i] == 0.0f, "element %d", i);
    if (CheckAllReduce16(comm, rank, nranks) != 0) return 1;
    RANK_CHECK(sieveCommDestroy(comm) == sieveSuccess, "destroy");
    return 0;
  });
  EXPECT_EQ(failures, "");
}

TEST(EndedInGroup, DestroyDropsTheQueuedCall) { CheckEndedInGroup("destroy"); }
TEST(EndedInGroup, AbortDropsTheQueuedCall) { CheckEndedInGroup("abort"); }
TEST(EndedInGroup, AbortFromAnotherThreadDropsTheQueuedCall) { CheckEndedInGroup("thread"); }

// ---- 8 and 11. Stale and made-up handles -------------------------------------------------------

// A destroyed communicator's handle stays an error after new communicators are made (before, a
// split reusing the address made sieveCommCount(stale) succeed and sieveCommDestroy(stale)
// destroy the new communicator); made-up values are refused without being read; a mask or a
// layout of a destroyed communicator is refused on a later one; sieveCommCount(comm, NULL)
// leaves its own message as comm's last error.
TEST(Handles, StaleAndMadeUpHandlesAreRefused) {
  std::string failures = RunRanks(Spec(2), [](int rank, int nranks, const sieveUniqueId& id) {
    sieveComm_t comm = nullptr;
    RANK_CHECK(InitComm(rank, nranks, id, &comm) == 0, "%s", sieveGetLastError(nullptr));
    int count = 0;
    RANK_CHECK(sieveCommCount(comm, nullptr) == sieveInvalidArgument, "count NULL");
    RANK_CHECK(Contains(sieveGetLastError(comm), "sieveCommCount: count is NULL"), "%s",
               sieveGetLastError(comm));
    std::vector<sieveComm_t> stale;
    sieveMask_t stale_mask = nullptr;
    sieveLayout_t stale_layout = nullptr;
    unsigned char keep[2] = {0xff, 0xff};
    for (int round = 0; round < 8; ++round) {
      sieveComm_t sub = nullptr;
      RANK_CHECK(sieveCommSplit(comm, 0, rank, &sub) == sieveSuccess, "%s",
                 sieveGetLastError(comm));
      for (sieveComm_t old : stale) {
        RANK_CHECK(sieveCommCount(old, &count) == sieveInvalidArgument, "round %d: stale count",
                   round);
        RANK_CHECK(Contains(sieveGetLastError(nullptr), "not a live comm"), "%s",
                   sieveGetLastError(nullptr));
        RANK_CHECK(sieveCommDestroy(old) == sieveInvalidArgument, "round %d: stale destroy",
                   round);
        RANK_CHECK(sieveCommAbort(old) == sieveSuccess, "abort of a stale handle is a no-op");
      }
      if (stale_mask != nullptr) {
        float x[16] = {};
        RANK_CHECK(sieveAllReduceMasked(x, x, 16, sieveFloat32, sieveSum, stale_mask, sub,
                                        nullptr) == sieveInvalidArgument, "stale mask");
        RANK_CHECK(Contains(sieveGetLastError(sub), "another communicator"), "%s",
                   sieveGetLastError(sub));
        RANK_CHECK(sieveAllReduceSubnet(x, x, 16, sieveFloat32, stale_layout, sub, nullptr) ==
                       sieveInvalidArgument, "stale layout");
        RANK_CHECK(sieveMaskDeregister(stale_mask) == sieveSuccess, "deregister");
        RANK_CHECK(sieveLayoutDeregister(stale_layout) == sieveSuccess, "deregister");
        RANK_CHECK(sieveMaskDeregister(stale_mask) == sieveInvalidArgument, "second deregister");
        size_t nnz = 0;
        RANK_CHECK(sieveMaskNnz(stale_mask, &nnz) == sieveInvalidArgument, "deregistered nnz");
      }
      RANK_CHECK(sieveMaskRegister(sub, keep, sieveMaskBitmap, 16, sieveMaskStrict, &stale_mask) ==
                     sieveSuccess, "%s", sieveGetLastError(sub));
      RANK_CHECK(sieveLayoutEqualSubnets(sub, 16, 2, &stale_layout) == sieveSuccess, "%s",
                 sieveGetLastError(sub));
      RANK_CHECK(sieveCommCount(sub, &count) == sieveSuccess && count == nranks, "count");
      RANK_CHECK(sieveCommDestroy(sub) == sieveSuccess, "destroy");
      stale.push_back(sub);
    }
    sieveMaskDeregister(stale_mask);
    sieveLayoutDeregister(stale_layout);
    // Made-up values: a small integer, a stack address, a mask passed as a communicator.
    char fake[64] = {};
    for (sieveComm_t bogus : {reinterpret_cast<sieveComm_t>(uintptr_t{0x1234}),
                              reinterpret_cast<sieveComm_t>(fake),
                              reinterpret_cast<sieveComm_t>(stale_mask)}) {
      RANK_CHECK(sieveCommCount(bogus, &count) == sieveInvalidArgument, "bogus count");
      float x = 1;
      RANK_CHECK(sieveAllReduce(&x, &x, 1, sieveFloat32, sieveSum, bogus, nullptr) ==
                     sieveInvalidArgument, "bogus all-reduce");
      RANK_CHECK(sieveCommDestroy(bogus) == sieveInvalidArgument, "bogus destroy");
    }
    if (CheckAllReduce16(comm, rank, nranks) != 0) return 1;
    RANK_CHECK(sieveCommDestroy(comm) == sieveSuccess, "destroy");
    return 0;
  });
  EXPECT_EQ(failures, "");
}

// ---- 7. Two threads on one communicator --------------------------------------------------------

// Rank 0's thread A is in an all-reduce (rank 1 joins it only later); a call from rank 0's main
// thread is refused with sieveInvalidUsage at once (before: UCX's assertion
// `worker->inprogress++ == 0` aborted the process), and thread A's call completes correctly.
TEST(Threads, SecondThreadsCallIsRefused) {
  std::string failures = RunRanks(Spec(2), [](int rank, int nranks, const sieveUniqueId& id) {
    sieveComm_t comm = nullptr;
    RANK_CHECK(InitComm(rank, nranks, id, &comm) == 0, "%s", sieveGetLastError(nullptr));
    float x = 1;
    // Connects the ranks, so rank 1's later join is prompt.
    RANK_CHECK(sieveAllReduce(&x, &x, 1, sieveFloat32, sieveSum, comm, nullptr) == sieveSuccess,
               "%s", sieveGetLastError(comm));
    if (rank == 1) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1500));
      if (CheckAllReduce16(comm, rank, nranks) != 0) return 1;
      RANK_CHECK(sieveCommDestroy(comm) == sieveSuccess, "destroy");
      return 0;
    }
    std::atomic<int> a_result{-1};
    // The probe below is a call on comm too: where it overlaps thread A's entry, A is the one
    // refused, and tries again.
    std::thread a([&] { a_result = CheckAllReduce16(comm, rank, nranks, true); });
    // Thread A is inside its call once sieveCommCount (a call on comm too) is refused.
    int count = 0;
    const auto start = Clock::now();
    while (sieveCommCount(comm, &count) == sieveSuccess && SecondsSince(start) < 1.2)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    const auto refused_at = Clock::now();
    float y[4] = {};
    sieveResult_t res = sieveAllReduce(y, y, 4, sieveFloat32, sieveSum, comm, nullptr);
    std::string msg = sieveGetLastError(nullptr);
    const double took = SecondsSince(refused_at);
    a.join();
    RANK_CHECK(res == sieveInvalidUsage, "second thread's call returned %d: %s", int(res),
               msg.c_str());
    RANK_CHECK(Contains(msg, "sieveAllReduce") && Contains(msg, "another thread"), "%s",
               msg.c_str());
    RANK_CHECK(took < 0.5, "the refusal took %.2f s", took);
    RANK_CHECK(a_result == 0, "thread A's all-reduce failed");
    RANK_CHECK(sieveCommDestroy(comm) == sieveSuccess, "destroy");
    return 0;
  });
  EXPECT_EQ(failures, "");
}

}  // namespace
}  // namespace sieve_test
