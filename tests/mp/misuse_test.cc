// Misuse and hostile input (issue 22), in real processes: zero counts, overlapping buffers,
// send/recv size mismatches, sizes that would wrap, allocation bounds, destroyed handles,
// queued work of a destroyed communicator, and two threads on one communicator. Every case
// must end in an error code with a message that describes the call (naming the peer and the
// field where ranks differ), never a crash, a hang or a silently wrong result.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
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
int CheckAllReduce16(sieveComm_t comm, int rank, int nranks) {
  float send[16], recv[16];
  for (int i = 0; i < 16; ++i) send[i] = float(rank + 1 + i);
  RANK_CHECK(sieveAllReduce(send, recv, 16, sieveFloat32, sieveSum, comm, nullptr) == sieveSuccess,
             "%s", sieveGetLastError(comm));
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

}  // namespace
}  // namespace sieve_test
