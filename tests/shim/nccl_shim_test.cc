// libsieve-nccl.so called directly through nccl_abi.h: unsupported calls and fp8 datatypes fail
// with the right code and a message, the version is NCCL's, SIEVE_NCCL_MODE is validated, and
// a one-rank communicator serves the collectives built from send/recv, splits and queries.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "nccl_abi.h"
#include "support/scoped_env.h"

namespace {

using sieve::testing::ScopedEnv;

bool Mentions(const char* message, const char* what) {
  return message != nullptr && std::string(message).find(what) != std::string::npos;
}

TEST(NcclShim, VersionIsTheEmulatedNccl) {
  int version = 0;
  EXPECT_EQ(ncclGetVersion(&version), ncclSuccess);
  EXPECT_EQ(version, NCCL_VERSION_CODE);
  version = 0;
  EXPECT_EQ(pncclGetVersion(&version), ncclSuccess);
  EXPECT_EQ(version, 22809);
  EXPECT_STRNE(ncclGetErrorString(ncclInvalidUsage), "");
}

TEST(NcclShim, UnsupportedCallsReturnInvalidUsageWithAMessage) {
  void* ptr = nullptr;
  ncclRedOp_t op = ncclSum;
  double scalar = 2;
  ncclWindow_t win = nullptr;
  ncclSimInfo_t sim = NCCL_SIM_INFO_INITIALIZER;
  ncclComm_t comms[2] = {nullptr, nullptr};
  int devs[2] = {0, 1};
  struct Case {
    const char* name;
    ncclResult_t result;
  } cases[] = {
      {"ncclMemAlloc", ncclMemAlloc(&ptr, 1024)},
      {"ncclMemFree", ncclMemFree(ptr)},
      {"ncclCommRegister", ncclCommRegister(nullptr, &scalar, sizeof scalar, &ptr)},
      {"ncclCommDeregister", ncclCommDeregister(nullptr, ptr)},
      {"ncclCommWindowRegister", ncclCommWindowRegister(nullptr, &scalar, 8, &win, 0)},
      {"ncclCommWindowDeregister", ncclCommWindowDeregister(nullptr, win)},
      {"ncclRedOpCreatePreMulSum",
       ncclRedOpCreatePreMulSum(&op, &scalar, ncclDouble, ncclScalarHostImmediate, nullptr)},
      {"ncclRedOpDestroy", ncclRedOpDestroy(static_cast<ncclRedOp_t>(ncclNumOps), nullptr)},
      {"ncclGroupSimulateEnd", ncclGroupSimulateEnd(&sim)},
      {"ncclCommInitAll", ncclCommInitAll(comms, 2, devs)},
      {"ncclCommCuDevice", ncclCommCuDevice(nullptr, &devs[0])},
      {"pncclMemAlloc", pncclMemAlloc(&ptr, 1024)},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(c.result, ncclInvalidUsage) << c.name;
  }
  // Each call left its message; check the last few one by one.
  EXPECT_EQ(ncclMemAlloc(&ptr, 16), ncclInvalidUsage);
  EXPECT_TRUE(Mentions(ncclGetLastError(nullptr), "ncclMemAlloc")) << ncclGetLastError(nullptr);
  EXPECT_TRUE(Mentions(ncclGetLastError(nullptr), "not supported by Sieve"));
  EXPECT_EQ(ncclRedOpCreatePreMulSum(&op, &scalar, ncclDouble, ncclScalarHostImmediate, nullptr),
            ncclInvalidUsage);
  EXPECT_TRUE(Mentions(ncclGetLastError(nullptr), "ncclRedOpCreatePreMulSum"));
  EXPECT_EQ(ncclCommInitAll(comms, 2, devs), ncclInvalidUsage);
  EXPECT_TRUE(Mentions(ncclGetLastError(nullptr), "not supported")) << ncclGetLastError(nullptr);
}

// A one-rank communicator created through the shim.
class OneRank : public ::testing::Test {
 protected:
  void SetUp() override {
    ncclUniqueId id;
    ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess) << ncclGetLastError(nullptr);
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    ASSERT_EQ(ncclCommInitRankConfig(&comm_, 1, id, 0, &config), ncclSuccess)
        << ncclGetLastError(nullptr);
  }
  void TearDown() override {
    if (comm_ != nullptr) {
      EXPECT_EQ(ncclCommDestroy(comm_), ncclSuccess);
    }
  }
  ncclComm_t comm_ = nullptr;
};

TEST_F(OneRank, QueriesAndUnsupportedCallsOnAComm) {
  int count = 0, rank = -1, device = -1;
  EXPECT_EQ(ncclCommCount(comm_, &count), ncclSuccess);
  EXPECT_EQ(ncclCommUserRank(comm_, &rank), ncclSuccess);
  EXPECT_EQ(count, 1);
  EXPECT_EQ(rank, 0);
  EXPECT_EQ(ncclCommCuDevice(comm_, &device), ncclInvalidUsage);
  EXPECT_TRUE(Mentions(ncclGetLastError(comm_), "ncclCommCuDevice")) << ncclGetLastError(comm_);
  void* handle = nullptr;
  double buf[4];
  EXPECT_EQ(ncclCommRegister(comm_, buf, sizeof buf, &handle), ncclInvalidUsage);
  EXPECT_TRUE(Mentions(ncclGetLastError(comm_), "ncclCommRegister")) << ncclGetLastError(comm_);
  ncclResult_t async = ncclInternalError;
  EXPECT_EQ(ncclCommGetAsyncError(comm_, &async), ncclSuccess);
  EXPECT_EQ(async, ncclSuccess);
}

TEST_F(OneRank, Fp8DatatypesAreInvalidArguments) {
  unsigned char in[8] = {}, out[8] = {};
  EXPECT_EQ(ncclAllReduce(in, out, 8, ncclFloat8e4m3, ncclSum, comm_, nullptr),
            ncclInvalidArgument);
  EXPECT_TRUE(Mentions(ncclGetLastError(comm_), "ncclFloat8e4m3")) << ncclGetLastError(comm_);
  EXPECT_EQ(ncclAllGather(in, out, 8, ncclFloat8e5m2, comm_, nullptr), ncclInvalidArgument);
  EXPECT_TRUE(Mentions(ncclGetLastError(comm_), "ncclFloat8e5m2")) << ncclGetLastError(comm_);
  EXPECT_EQ(ncclAlltoAll(in, out, 8, ncclFloat8e5m2, comm_, nullptr), ncclInvalidArgument);
  // The communicator is still usable.
  EXPECT_EQ(ncclAllReduce(in, out, 8, ncclUint8, ncclSum, comm_, nullptr), ncclSuccess)
      << ncclGetLastError(comm_);
}

TEST_F(OneRank, CollectivesBuiltFromSendRecvIncludeTheSelfBlock) {
  std::vector<int> send = {1, 2, 3}, recv(3, 0);
  ASSERT_EQ(ncclAlltoAll(send.data(), recv.data(), 3, ncclInt32, comm_, nullptr), ncclSuccess)
      << ncclGetLastError(comm_);
  EXPECT_EQ(recv, send);
  recv.assign(3, 0);
  ASSERT_EQ(ncclGather(send.data(), recv.data(), 3, ncclInt32, 0, comm_, nullptr), ncclSuccess);
  EXPECT_EQ(recv, send);
  recv.assign(3, 0);
  ASSERT_EQ(ncclScatter(send.data(), recv.data(), 3, ncclInt32, 0, comm_, nullptr), ncclSuccess);
  EXPECT_EQ(recv, send);
  // In place: the root's own block stays where it is.
  EXPECT_EQ(ncclGather(send.data(), send.data(), 3, ncclInt32, 0, comm_, nullptr), ncclSuccess);
  EXPECT_EQ(ncclScatter(send.data(), send.data(), 3, ncclInt32, 0, comm_, nullptr), ncclSuccess);
  EXPECT_EQ(send, (std::vector<int>{1, 2, 3}));
  EXPECT_EQ(ncclGather(send.data(), recv.data(), 3, ncclInt32, 1, comm_, nullptr),
            ncclInvalidArgument);
}

TEST_F(OneRank, SplitAndFinalize) {
  ncclComm_t sub = comm_;  // must be overwritten with NULL
  ASSERT_EQ(ncclCommSplit(comm_, NCCL_SPLIT_NOCOLOR, 0, &sub, nullptr), ncclSuccess)
      << ncclGetLastError(comm_);
  EXPECT_EQ(sub, nullptr);
  ASSERT_EQ(ncclCommSplit(comm_, 3, 0, &sub, nullptr), ncclSuccess) << ncclGetLastError(comm_);
  ASSERT_NE(sub, nullptr);
  float x = 2.5f, y = 0;
  EXPECT_EQ(ncclAllReduce(&x, &y, 1, ncclFloat, ncclSum, sub, nullptr), ncclSuccess);
  EXPECT_EQ(y, 2.5f);
  EXPECT_EQ(ncclCommFinalize(sub), ncclSuccess);
  EXPECT_EQ(ncclCommDestroy(sub), ncclSuccess);
  ncclConfig_t bad = NCCL_CONFIG_INITIALIZER;
  bad.magic = 0;
  EXPECT_EQ(ncclCommSplit(comm_, 0, 0, &sub, &bad), ncclInvalidArgument);
  EXPECT_TRUE(Mentions(ncclGetLastError(nullptr), "NCCL_CONFIG_INITIALIZER"));
}

// Polls ncclCommGetAsyncError until the communicator leaves ncclInProgress (bounded, 60 s).
ncclResult_t PollNccl(ncclComm_t comm) {
  ncclResult_t async = ncclInProgress;
  for (int i = 0; i < 300000 && async == ncclInProgress; ++i) {
    if (ncclCommGetAsyncError(comm, &async) != ncclSuccess) return ncclInternalError;
    if (async == ncclInProgress) std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  return async;
}

// ncclConfig_t.blocking = 0 is honoured: init, collectives and split return ncclInProgress and
// ncclCommGetAsyncError reports ncclInProgress until they are done.
TEST(NcclShim, NonBlockingConfigIsHonoured) {
  ncclUniqueId id;
  ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess) << ncclGetLastError(nullptr);
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  config.commName = "shim-nonblocking";
  ncclComm_t comm = nullptr;
  ASSERT_EQ(ncclCommInitRankConfig(&comm, 1, id, 0, &config), ncclInProgress)
      << ncclGetLastError(nullptr);
  ASSERT_NE(comm, nullptr);
  ASSERT_EQ(PollNccl(comm), ncclSuccess) << ncclGetLastError(comm);
  std::mt19937 rng(std::random_device{}());
  std::vector<float> in(2 * (rng() % 5000) + 1), out(in.size(), -1.0f);
  for (float& v : in) v = static_cast<float>(static_cast<int>(rng() % 2001) - 1000);
  ASSERT_EQ(ncclAllReduce(in.data(), out.data(), in.size(), ncclFloat, ncclSum, comm, nullptr),
            ncclInProgress)
      << ncclGetLastError(comm);
  ASSERT_EQ(PollNccl(comm), ncclSuccess) << ncclGetLastError(comm);
  EXPECT_EQ(out, in);  // one rank: the sum is the input
  ncclComm_t sub = nullptr;
  ASSERT_EQ(ncclCommSplit(comm, 0, 0, &sub, &config), ncclInProgress) << ncclGetLastError(comm);
  ASSERT_NE(sub, nullptr);
  ASSERT_EQ(PollNccl(sub), ncclSuccess) << ncclGetLastError(sub);
  EXPECT_EQ(PollNccl(comm), ncclSuccess) << ncclGetLastError(comm);
  int count = 0;
  EXPECT_EQ(ncclCommCount(sub, &count), ncclSuccess);
  EXPECT_EQ(count, 1);
  std::fill(out.begin(), out.end(), -1.0f);
  ASSERT_EQ(ncclBroadcast(in.data(), out.data(), in.size(), ncclFloat, 0, sub, nullptr),
            ncclInProgress);
  ASSERT_EQ(PollNccl(sub), ncclSuccess) << ncclGetLastError(sub);
  EXPECT_EQ(out, in);
  EXPECT_EQ(ncclCommFinalize(sub), ncclSuccess);
  EXPECT_EQ(ncclCommDestroy(sub), ncclSuccess);
  EXPECT_EQ(ncclCommDestroy(comm), ncclSuccess);

  // ncclCommInitRank stays blocking.
  ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  ASSERT_EQ(ncclCommInitRank(&comm, 1, id, 0), ncclSuccess) << ncclGetLastError(nullptr);
  EXPECT_EQ(ncclAllReduce(in.data(), out.data(), in.size(), ncclFloat, ncclMax, comm, nullptr),
            ncclSuccess);
  EXPECT_EQ(ncclCommDestroy(comm), ncclSuccess);
}

TEST(NcclShim, BadHandles) {
  EXPECT_EQ(ncclCommAbort(nullptr), ncclSuccess);
  EXPECT_EQ(ncclCommDestroy(nullptr), ncclInvalidArgument);
  int count = 0;
  EXPECT_NE(ncclCommCount(nullptr, &count), ncclSuccess);
  EXPECT_STRNE(ncclGetLastError(nullptr), "");
}

TEST(NcclShim, UnknownModeFailsInitNamingTheAcceptedValues) {
  ncclUniqueId id;
  ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess) << ncclGetLastError(nullptr);
  ScopedEnv mode("SIEVE_NCCL_MODE", "fast");
  ncclComm_t comm = nullptr;
  EXPECT_EQ(ncclCommInitRank(&comm, 1, id, 0), ncclInvalidArgument);
  EXPECT_EQ(comm, nullptr);
  std::string message = ncclGetLastError(nullptr);
  EXPECT_TRUE(Mentions(message.c_str(), "SIEVE_NCCL_MODE=fast")) << message;
  EXPECT_TRUE(Mentions(message.c_str(), "dense")) << message;
}

}  // namespace
