// The quantized reduce-scatter on device buffers over the fake device: every
// rank's block staged whole (SIEVE_GPU_CHUNK_BYTES far below the buffer, which
// would cut a dense reduce-scatter into chunks and re-index its Philox
// stream), in place and not, masked and not, with error feedback for three
// steps: bit for bit
// the host path's result (its own residuals, from zero alike). The quantized
// all-gather staged whole the same way, in place and not: the host path's bytes.
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "support/fake_device.h"
#include "support/fake_memory.h"
#include "support/mp_harness.h"
#include "support/ternary_reference.h"

namespace sieve_test {
namespace {

// One collective call on (sendbuff, recvbuff, stream).
using ShardedCall = std::function<sieveResult_t(const void*, void*, sieveStream_t)>;

// Runs `call` on host buffers (`send` into a host output), then on device buffers (`send`
// uploaded to `d_send`, the result read back from `d_out`), and returns 0 when the device
// result's `out_bytes` equal the host path's (else the rank's failure, naming `what`).
int DeviceMatchesHost(FakeMemory& mem, sieveComm_t comm, const ShardedCall& call,
                      const std::vector<char>& send, char* d_send, char* d_out, size_t out_bytes,
                      const std::string& what) {
  std::vector<char> want(out_bytes), got(out_bytes);
  RANK_CHECK(call(send.data(), want.data(), nullptr) == sieveSuccess, "host: %s",
             sieveGetLastError(comm));
  mem.Upload(d_send, send.data(), send.size());
  RANK_CHECK(call(d_send, d_out, mem.stream()) == sieveSuccess, "device: %s",
             sieveGetLastError(comm));
  mem.Synchronize();
  mem.Download(got.data(), d_out, out_bytes);
  RANK_CHECK(std::memcmp(got.data(), want.data(), out_bytes) == 0,
             "%s: the device result differs from the host path's", what.c_str());
  return 0;
}

// Three ranks, each rank's block staged whole through chunks far below its size.
RankSpec FakeDeviceSpec() {
  RankSpec spec;
  spec.nranks = 3;
  spec.env = {{"SIEVE_GPU_CHUNK_BYTES", "4096"}, {"SIEVE_TIMEOUT", "60"}};
  return spec;
}

int ReduceScatterMatchesHost(int rank, int n, const sieveUniqueId& id) {
  ScopedFakeRuntime rt;
  sieveComm_t comm = nullptr;
  {
    FakeMemory mem(&rt);
    RANK_CHECK(sieveCommInitRank(&comm, n, id, rank) == sieveSuccess, "init");
    struct Case {
      sieveDataType_t dtype;
      sieveRedOp_t op;
      int levels;
      bool feedback, in_place, masked;
    };
    const Case cases[] = {{sieveFloat32, sieveSum, 1, false, false, false},
                          {sieveFloat16, sieveAvg, 7, true, true, false},
                          {sieveBfloat16, sieveSum, 127, true, false, false},
                          {sieveFloat32, sieveAvg, 3, true, false, true}};
    std::vector<std::vector<char>> host_sends;  // residual keys: kept alive, never reused
    host_sends.reserve(4);
    int k = 0;
    for (const Case& c : cases) {
      const size_t count = 3001 + 2 * k, es = c.dtype == sieveFloat32 ? 4 : 2;
      const size_t bytes = count * es, total = bytes * n;
      std::vector<char>& send = host_sends.emplace_back(total);
      char* d = static_cast<char*>(mem.Alloc(total));
      char* d_out = c.in_place ? d + rank * bytes : static_cast<char*>(mem.Alloc(bytes));
      sieveMask_t mask = nullptr;  // over the whole sendbuff, about 2/3 kept
      if (c.masked) {
        std::vector<uint8_t> keep(count * n);
        for (size_t j = 0; j < keep.size(); ++j) keep[j] = (j * 7 + j / 5) % 3 != 1;
        RANK_CHECK(sieveMaskRegister(comm, keep.data(), sieveMaskBytes, keep.size(),
                                     sieveMaskStrict, &mask) == sieveSuccess,
                   "register: %s", sieveGetLastError(comm));
      }
      for (int step = 0; step < (c.feedback ? 3 : 1); ++step) {
        FillTernaryInput(40 + 4 * k + step, rank, c.dtype, count * n, send.data());
        const sieveTernaryParams_t p =
            TernaryParams(9 + k, step, k == 0 ? 0 : 61, mask, c.feedback);
        auto call = [&](const void* in, void* out, sieveStream_t stream) {
          return sieveReduceScatterQuantized(in, out, count, c.dtype, c.op, c.levels, &p, comm,
                                             stream);
        };
        if (DeviceMatchesHost(mem, comm, call, send, d, d_out, bytes,
                              "case " + std::to_string(k) + " step " + std::to_string(step)))
          return 1;
      }
      if (mask != nullptr) RANK_CHECK(sieveMaskDeregister(mask) == sieveSuccess, "deregister");
      ++k;
    }
    RANK_CHECK(sieveCommDestroy(comm) == sieveSuccess, "destroy");
  }
  return 0;
}

TEST(DeviceShardedFakeMp, QuantizedReduceScatterMatchesTheHostPath) {
  EXPECT_EQ(RunRanks(FakeDeviceSpec(), ReduceScatterMatchesHost), "");
}

int AllGatherMatchesHost(int rank, int n, const sieveUniqueId& id) {
  ScopedFakeRuntime rt;
  sieveComm_t comm = nullptr;
  {
    FakeMemory mem(&rt);
    RANK_CHECK(sieveCommInitRank(&comm, n, id, rank) == sieveSuccess, "init");
    int k = 0;
    for (sieveDataType_t dtype : {sieveFloat32, sieveBfloat16})
      for (int bits : {8, 4}) {
        const size_t count = 2001 + 2 * k, es = dtype == sieveFloat32 ? 4 : 2;
        const size_t bytes = count * es, total = bytes * n;
        const bool in_place = k % 2 == 1;
        std::vector<char> send(bytes);
        FillTernaryInput(70 + k, rank, dtype, count, send.data());
        char* d_out = static_cast<char*>(mem.Alloc(total));
        char* d = in_place ? d_out + rank * bytes : static_cast<char*>(mem.Alloc(bytes));
        auto call = [&](const void* in, void* out, sieveStream_t stream) {
          return sieveAllGatherQuantized(in, out, count, dtype, bits, comm, stream);
        };
        if (DeviceMatchesHost(mem, comm, call, send, d, d_out, total,
                              "all-gather case " + std::to_string(k)))
          return 1;
        ++k;
      }
    RANK_CHECK(sieveCommDestroy(comm) == sieveSuccess, "destroy");
  }
  return 0;
}

TEST(DeviceShardedFakeMp, QuantizedAllGatherMatchesTheHostPath) {
  EXPECT_EQ(RunRanks(FakeDeviceSpec(), AllGatherMatchesHost), "");
}

}  // namespace
}  // namespace sieve_test
