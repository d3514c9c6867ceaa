// Host buffers never enter gpu/ (issue 18): on a machine without a CUDA
// driver, gpu/ is asked once per process whether there is one; after that,
// calls on host buffers (collectives, every mode, sends and receives) ask no
// pointer question and never look up gpu/'s runtime. With a (fake) device,
// plan/ asks gpu/'s classifier once per buffer and still routes host calls to
// the host.
#include <gtest/gtest.h>

#include <vector>

#include "gpu/gpu_runtime.h"
#include "plan/device_choice.h"
#include "support/fake_device.h"
#include "support/mp_harness.h"
#include "support/thread_ranks.h"

namespace sieve_test {
namespace {

RankSpec Spec(int n) {
  RankSpec spec;
  spec.nranks = n;
  spec.kill_after_s = 60;
  spec.env = {{"SIEVE_TIMEOUT", "30"}};
  return spec;
}

// A dense, a ternary and a masked all-reduce, a broadcast and a send/receive
// pair, all on host buffers.
int RunHostCalls(int rank, int n, const sieveUniqueId& id) {
  sieveComm_t comm = nullptr;
  RANK_CHECK(InitComm(rank, n, id, &comm) == 0, "%s", sieveGetLastError(nullptr));
  std::vector<float> send(37, 1.0f + rank), recv(37, 0.0f);
  RANK_CHECK(sieveAllReduce(send.data(), recv.data(), 37, sieveFloat32, sieveSum, comm, nullptr) ==
                 sieveSuccess, "allreduce: %s", sieveGetLastError(comm));
  RANK_CHECK(recv[36] == n * (n + 1) / 2.0f, "allreduce sum %g", recv[36]);
  RANK_CHECK(sieveBroadcast(send.data(), recv.data(), 37, sieveFloat32, 0, comm, nullptr) ==
                 sieveSuccess, "broadcast: %s", sieveGetLastError(comm));
  sieveTernaryParams_t tp = {};
  tp.seed = 7;
  RANK_CHECK(sieveAllReduceTernary(send.data(), recv.data(), 37, sieveFloat32, sieveSum, &tp, comm,
                                   nullptr) == sieveSuccess, "ternary: %s", sieveGetLastError(comm));
  std::vector<uint8_t> mask(37, 1);
  sieveMask_t handle = nullptr;
  RANK_CHECK(sieveMaskRegister(comm, mask.data(), sieveMaskBytes, 37, sieveMaskStrict, &handle) ==
                 sieveSuccess, "register: %s", sieveGetLastError(comm));
  RANK_CHECK(sieveAllReduceMasked(send.data(), recv.data(), 37, sieveFloat32, sieveSum, handle,
                                  comm, nullptr) == sieveSuccess, "masked: %s", sieveGetLastError(comm));
  RANK_CHECK(sieveGroupStart() == sieveSuccess, "group");
  RANK_CHECK(sieveSend(send.data(), 37, sieveFloat32, (rank + 1) % n, comm, nullptr) == sieveSuccess,
             "send: %s", sieveGetLastError(comm));
  RANK_CHECK(sieveRecv(recv.data(), 37, sieveFloat32, (rank + n - 1) % n, comm, nullptr) ==
                 sieveSuccess, "recv: %s", sieveGetLastError(comm));
  RANK_CHECK(sieveGroupEnd() == sieveSuccess, "group end: %s", sieveGetLastError(comm));
  RANK_CHECK(sieveMaskDeregister(handle) == sieveSuccess, "deregister");
  RANK_CHECK(sieveCommDestroy(comm) == sieveSuccess, "destroy");
  return 0;
}

TEST(HostSeamTest, HostCallsNeverEnterGpuWithoutADriver) {
  // gpu/ looks for a driver on the process's first pointer question.
  sieve::plan::MemoryKind kind = sieve::plan::MemoryKind::kDevice;
  std::vector<float> probe(4);
  ASSERT_TRUE(sieve::plan::ChooseMemory({{"sendbuff", probe.data()}}, &kind).ok());
  EXPECT_EQ(kind, sieve::plan::MemoryKind::kHost);
  if (sieve::gpu::Runtime().available) GTEST_SKIP() << "this machine has a CUDA driver";
  EXPECT_EQ(sieve::plan::InstalledPointerQuery(), nullptr)
      << "without a driver gpu/ leaves no pointer query installed";
  const unsigned long asked = sieve::plan::PointerQueriesAsked();
  const unsigned long lookups = sieve::gpu::RuntimeLookups();
  EXPECT_EQ(RunThreadRanks(Spec(3), RunHostCalls), "");
  EXPECT_EQ(sieve::plan::PointerQueriesAsked(), asked) << "a host call asked gpu/ about a pointer";
  EXPECT_EQ(sieve::gpu::RuntimeLookups(), lookups) << "a host call entered gpu/";
}

TEST(HostSeamTest, WithAFakeDeviceEachBufferIsAskedAndHostCallsStayOnTheHost) {
  ScopedFakeRuntime fake;
  ASSERT_NE(sieve::plan::InstalledPointerQuery(), nullptr);
  const unsigned long asked = sieve::plan::PointerQueriesAsked();
  std::vector<float> host(4);
  sieve::plan::MemoryKind kind = sieve::plan::MemoryKind::kDevice;
  EXPECT_TRUE(sieve::plan::ChooseMemory({{"sendbuff", host.data()}, {"recvbuff", &host[1]}}, &kind)
                  .ok());
  EXPECT_EQ(kind, sieve::plan::MemoryKind::kHost);
  EXPECT_EQ(sieve::plan::PointerQueriesAsked(), asked + 2);
  EXPECT_EQ(RunThreadRanks(Spec(2), RunHostCalls), "");
  EXPECT_GT(sieve::plan::PointerQueriesAsked(), asked + 2);
}

}  // namespace
}  // namespace sieve_test
