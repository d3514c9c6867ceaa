// The quantized reduce-scatter on device buffers over the fake device: quantized
// by the device kernels (only scales, codes and this rank's chunk's sums staged,
// a chunk that starts mid-block dequantized into scratch and copied), or, masked
// or without kernels, every rank's block staged whole (SIEVE_GPU_CHUNK_BYTES far
// below the buffer, which would cut a dense reduce-scatter into chunks and
// re-index its Philox stream); in place and not, with error feedback for three
// steps: bit for bit the host path's result (its own residuals, from zero
// alike), also with a device rank among host ranks in one call. The quantized
// all-gather encoded and decoded by the device kernels (only encoded shards
// staged), or staged whole without them, in place and not: the host path's bytes.
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "support/fake_device.h"
#include "support/fake_memory.h"
#include "support/mp_harness.h"
#include "support/ternary_reference.h"
#include "kernels/block_quant.h"
#include "kernels/ternary.h"

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

// A rank's checks on a communicator over the fake device (its memory, its counters).
using FakeCheck = int (*)(sieveComm_t comm, int rank, int n, FakeDeviceOps& ops, FakeMemory& mem);

// The rank function that runs `check` between the communicator's init and destroy.
RankFn OnFakeDevice(FakeCheck check) {
  return [check](int rank, int n, const sieveUniqueId& id) {
    ScopedFakeRuntime rt;
    sieveComm_t comm = nullptr;
    {
      FakeMemory mem(&rt);
      RANK_CHECK(sieveCommInitRank(&comm, n, id, rank) == sieveSuccess, "init");
      if (check(comm, rank, n, rt.ops, mem) != 0) return 1;
      RANK_CHECK(sieveCommDestroy(comm) == sieveSuccess, "destroy");
    }
    return 0;
  };
}

// Three ranks, each rank's block staged whole through chunks far below its size.
RankSpec FakeDeviceSpec() {
  RankSpec spec;
  spec.nranks = 3;
  spec.env = {{"SIEVE_GPU_CHUNK_BYTES", "4096"}, {"SIEVE_TIMEOUT", "60"}};
  return spec;
}

int ReduceScatterMatchesHost(sieveComm_t comm, int rank, int n, FakeDeviceOps& ops, FakeMemory& mem) {
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
  return 0;
}

TEST(DeviceShardedFakeMp, QuantizedReduceScatterMatchesTheHostPath) {
  EXPECT_EQ(RunRanks(FakeDeviceSpec(), OnFakeDevice(ReduceScatterMatchesHost)), "");
}

// With device kernels only the compressed parts cross: to the host the block maxima of the
// whole sendbuff and its codes (TernaryBits(L) bits), back the agreed scales and this rank's
// chunk's final sums (TernaryBits(nL) bits) from the block boundary at or before the chunk
// (a chunk that starts mid-block is dequantized into scratch and copied: one device copy).
// Without kernels (a libsieve built without them) every block is staged whole.
int ReduceScatterStagesCompressed(sieveComm_t comm, int rank, int n, FakeDeviceOps& ops, FakeMemory& mem) {
  const size_t block = 1000;
  int k = 0;
  for (bool kernels : {true, false})
    for (size_t count : {size_t{3001}, size_t{2000}}) {  // mid-block chunks; on boundaries
      ops.kernels = kernels;
      const int levels = k % 2 == 0 ? 1 : 7;
      const size_t total = count * n, bytes = count * 4;
      std::vector<char> send(total * 4);
      FillTernaryInput(90 + k, rank, sieveFloat32, total, send.data());
      char* d = static_cast<char*>(mem.Alloc(total * 4));
      char* d_out = static_cast<char*>(mem.Alloc(bytes));
      const sieveTernaryParams_t p = TernaryParams(5 + k, 1, block, nullptr, 0);
      auto call = [&](const void* in, void* out, sieveStream_t stream) {
        return sieveReduceScatterQuantized(in, out, count, sieveFloat32, sieveSum, levels, &p,
                                           comm, stream);
      };
      const size_t to_host = ops.bytes_to_host.load(), back = ops.bytes_to_device.load();
      const int copies = ops.device_copies.load(), quantize = ops.ternary_quantize.load();
      const std::string what = "kernels " + std::to_string(kernels) + " count " +
                               std::to_string(count);
      if (DeviceMatchesHost(mem, comm, call, send, d, d_out, bytes, what)) return 1;
      const size_t first = count * rank, lead = first % block;
      const size_t scales = (total + block - 1) / block * 4;
      const size_t codes = sieve::kernels::TernaryPackedBytes(
          total, sieve::kernels::TernaryBits(levels));
      const size_t sums = sieve::kernels::TernaryPackedBytes(
          lead + count, sieve::kernels::TernaryBits(n * levels));
      const size_t staged = ops.bytes_to_host.load() - to_host;
      const size_t returned = ops.bytes_to_device.load() - back;
      RANK_CHECK(staged == (kernels ? scales + codes : total * 4),
                 "%s: %zu bytes staged to the host", what.c_str(), staged);
      RANK_CHECK(returned == (kernels ? scales + sums : bytes),
                 "%s: %zu bytes copied back", what.c_str(), returned);
      RANK_CHECK(ops.ternary_quantize.load() - quantize == (kernels ? 1 : 0),
                 "%s: quantize kernels", what.c_str());
      RANK_CHECK(ops.device_copies.load() - copies == (kernels && lead > 0 ? 1 : 0),
                 "%s: %d device copies (lead %zu)", what.c_str(),
                 ops.device_copies.load() - copies, lead);
      ++k;
    }
  return 0;
}

TEST(DeviceShardedFakeMp, QuantizedReduceScatterStagesOnlyScalesCodesAndChunk) {
  EXPECT_EQ(RunRanks(FakeDeviceSpec(), OnFakeDevice(ReduceScatterStagesCompressed)), "");
}

// A device rank among host ranks in one call: it sends the host path's messages in the
// same order, so every rank gets the all-host result.
int ReduceScatterDeviceRankWithHostRanks(sieveComm_t comm, int rank, int n, FakeDeviceOps& ops, FakeMemory& mem) {
  const size_t count = 4099, total = count * n;
  std::vector<float> in(total), want(count), got(count);
  FillTernaryInput(4343, rank, sieveFloat32, total, in.data());
  const sieveTernaryParams_t p = TernaryParams(7, 3, 0, nullptr, 0);
  RANK_CHECK(sieveReduceScatterQuantized(in.data(), want.data(), count, sieveFloat32, sieveAvg,
                                         3, &p, comm, nullptr) == sieveSuccess,
             "host: %s", sieveGetLastError(comm));
  if (rank == 1) {  // the device rank
    float* d = static_cast<float*>(mem.Alloc(total * 4));
    mem.Upload(d, in.data(), total * 4);
    RANK_CHECK(sieveReduceScatterQuantized(d, d + rank * count, count, sieveFloat32, sieveAvg,
                                           3, &p, comm, mem.stream()) == sieveSuccess,
               "device: %s", sieveGetLastError(comm));
    mem.Synchronize();
    mem.Download(got.data(), d + rank * count, count * 4);
    RANK_CHECK(ops.ternary_quantize.load() == 1, "rank 1 did not quantize on the device");
  } else {
    RANK_CHECK(sieveReduceScatterQuantized(in.data(), got.data(), count, sieveFloat32, sieveAvg,
                                           3, &p, comm, nullptr) == sieveSuccess,
               "host: %s", sieveGetLastError(comm));
  }
  RANK_CHECK(std::memcmp(got.data(), want.data(), count * 4) == 0,
             "the result differs from the all-host run");
  return 0;
}

TEST(DeviceShardedFakeMp, QuantizedReduceScatterDeviceRankWithHostRanks) {
  RankSpec spec = FakeDeviceSpec();
  spec.nranks = 4;
  EXPECT_EQ(RunRanks(spec, OnFakeDevice(ReduceScatterDeviceRankWithHostRanks)), "");
}

// Misuse on device buffers: count 0 on rank 0 only (rank 0 takes the staged route, the
// others the kernels) fails every rank's reduce-scatter with the mismatch's own message
// (naming the count), within the timeout, rather than pairing mismatched messages.
int CountZeroOnOneRank(sieveComm_t comm, int rank, int n, FakeDeviceOps&, FakeMemory& mem) {
  const size_t count = rank == 0 ? 0 : 3001;
  char* d = static_cast<char*>(mem.Alloc(3001 * 4 * n + 4));
  const sieveTernaryParams_t p = TernaryParams(3, 0, 0, nullptr, 0);
  sieveResult_t r = sieveReduceScatterQuantized(d, d + rank * count * 4, count, sieveFloat32,
                                                sieveSum, 1, &p, comm, mem.stream());
  mem.Synchronize();
  sieveResult_t async = sieveSuccess;
  RANK_CHECK(sieveCommGetAsyncError(comm, &async) == sieveSuccess, "async error query");
  RANK_CHECK(r != sieveSuccess || async != sieveSuccess,
             "reduce-scatter with count 0 on rank 0 only succeeded on rank %d", rank);
  RANK_CHECK(std::strstr(sieveGetLastError(comm), "count") != nullptr, "%s",
             sieveGetLastError(comm));
  return 0;
}

TEST(DeviceShardedFakeMp, CountZeroOnOneRankFailsOnEveryRank) {
  RankSpec spec = FakeDeviceSpec();
  spec.env.push_back({"SIEVE_TIMEOUT", "10"});
  EXPECT_EQ(RunRanks(spec, OnFakeDevice(CountZeroOnOneRank)), "");
}

// The quantized all-gather: the device kernels encode this rank's shard and decode all
// of them, and only encoded shards cross (BlockQuantBytes to the host, n of them back);
// without kernels every block is staged whole. Either way the host path's bytes.
int AllGatherMatchesHost(sieveComm_t comm, int rank, int n, FakeDeviceOps& ops, FakeMemory& mem) {
  int k = 0;
  for (bool kernels : {true, false})
    for (sieveDataType_t dtype : {sieveFloat32, sieveBfloat16})
      for (int bits : {8, 4}) {
        ops.kernels = kernels;
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
        const size_t to_host = ops.bytes_to_host.load(), back = ops.bytes_to_device.load();
        const int encodes = ops.block_quant_encodes.load(), decodes = ops.block_quant_decodes.load();
        const std::string what = "all-gather case " + std::to_string(k);
        if (DeviceMatchesHost(mem, comm, call, send, d, d_out, total, what)) return 1;
        const size_t shard = sieve::kernels::BlockQuantBytes(count, bits);
        const size_t staged = ops.bytes_to_host.load() - to_host;
        const size_t returned = ops.bytes_to_device.load() - back;
        RANK_CHECK(staged == (kernels ? shard : bytes), "%s: %zu bytes staged", what.c_str(),
                   staged);
        RANK_CHECK(returned == (kernels ? shard * n : total), "%s: %zu bytes back", what.c_str(),
                   returned);
        RANK_CHECK(ops.block_quant_encodes.load() - encodes == (kernels ? 1 : 0) &&
                       ops.block_quant_decodes.load() - decodes == (kernels ? n : 0),
                   "%s: block-scaled kernels launched", what.c_str());
        ++k;
      }
  return 0;
}

TEST(DeviceShardedFakeMp, QuantizedAllGatherMatchesTheHostPath) {
  EXPECT_EQ(RunRanks(FakeDeviceSpec(), OnFakeDevice(AllGatherMatchesHost)), "");
}

}  // namespace
}  // namespace sieve_test
