// Masked + ternary and error feedback on device buffers over the fake device,
// as real processes: what is staged (exactly the compressed data), which
// kernels ran, that the call only enqueues, that device and host ranks mix,
// which plan the hierarchical layout takes, and that the library's device
// memory (residuals, scratch) is freed with the communicator. Results are
// compared with the host path bit for bit.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "kernels/ternary.h"
#include "support/fake_device.h"
#include "support/fake_memory.h"
#include "support/mp_harness.h"
#include "support/reference.h"
#include "support/ternary_reference.h"

namespace sieve_test {
namespace {

RankSpec Spec(int n, bool sync) {
  RankSpec spec;
  spec.nranks = n;
  spec.env = {{"SIEVE_GPU_CHUNK_BYTES", "4096"}, {"SIEVE_GPU_SYNC", sync ? "1" : "0"},
              {"SIEVE_TIMEOUT", "120"}};
  return spec;
}

bool Blocking() {
  const char* sync_env = std::getenv("SIEVE_GPU_SYNC");
  return sync_env != nullptr && std::string(sync_env) == "1";
}

// A seed drawn by rank 0 for this run, the same on every rank.
uint64_t SharedSeed(sieveComm_t comm, int rank) {
  uint64_t seed = 0;
  if (rank == 0) seed = (uint64_t{std::random_device{}()} << 32) | std::random_device{}();
  if (sieveBroadcast(&seed, &seed, 1, sieveUint64, 0, comm, nullptr) != sieveSuccess) return 0;
  return seed;
}

// A mask keeping about density_pct % of count elements (at least one).
std::vector<uint8_t> RandomMask(std::mt19937_64& rng, size_t count, int density_pct) {
  std::vector<uint8_t> keep(count);
  for (auto& b : keep) b = static_cast<int>(rng() % 100) < density_pct;
  keep[rng() % count] = 1;
  return keep;
}

struct Counts {
  size_t to_host, to_device;
  int packs, unpacks, absmax, quantize, quantize_fb, apply, dequantize, dequantize_scatter;
};
Counts Read(const FakeDeviceOps& o) {
  return {o.bytes_to_host.load(),         o.bytes_to_device.load(),
          o.packs.load(),                 o.unpacks.load(),
          o.ternary_absmax.load(),        o.ternary_quantize.load(),
          o.ternary_quantize_feedback.load(), o.ternary_feedback_apply.load(),
          o.ternary_dequantize.load(),    o.ternary_dequantize_scatter.load()};
}

// Several steps of masked + ternary and of dense ternary with error feedback:
// the device path packs and quantizes on the stream, so exactly the block
// maxima and the 2-bit wire of the quantized elements go to the host, and the
// agreed scales and final sums come back; the call only enqueues; results
// equal the host path (its own residuals) at every step.
int MaskedAndFeedback(int rank, int nranks, const sieveUniqueId& id) {
  ScopedFakeRuntime rt;
  sieveComm_t comm = nullptr;
  {
    FakeMemory mem(&rt);
    RANK_CHECK(sieveCommInitRank(&comm, nranks, id, rank) == sieveSuccess, "init");
    const uint64_t seed = SharedSeed(comm, rank);
    std::mt19937_64 rng(seed);
    const bool blocking = Blocking();
    struct Case {
      sieveDataType_t dtype;
      sieveRedOp_t op;
      int density_pct;  // 0: no mask
      bool feedback;
    };
    const Case cases[] = {
        {sieveFloat32, sieveSum, 40, false}, {sieveFloat16, sieveAvg, 3, true},
        {sieveBfloat16, sieveSum, 95, true}, {sieveFloat32, sieveAvg, 0, true},
        {sieveBfloat16, sieveAvg, 20, false},
    };
    std::deque<std::vector<char>> host_sends;  // residual keys: never reused
    std::vector<sieveMask_t> masks;
    int k = 0;
    for (const Case& c : cases) {
      const size_t count = 2001 + 2 * (rng() % 12000);
      const size_t block = k % 2 ? 2048 : rng() % 500 + 1;
      sieveMask_t mask = nullptr;
      size_t elems = count;  // quantized elements
      if (c.density_pct > 0) {
        std::vector<uint8_t> keep = RandomMask(rng, count, c.density_pct);
        elems = 0;
        for (uint8_t b : keep) elems += b;
        RANK_CHECK(sieveMaskRegister(comm, keep.data(), sieveMaskBytes, count, sieveMaskStrict,
                                     &mask) == sieveSuccess, "register: %s",
                   sieveGetLastError(comm));
        masks.push_back(mask);
      }
      const size_t es = TypeSize(c.dtype), bytes = count * es;
      const size_t nblocks = (elems + block - 1) / block;
      const size_t wire = (elems + 3) / 4;
      const size_t sums = sieve::kernels::TernaryPackedBytes(
          elems, sieve::kernels::TernaryBits(nranks));
      std::vector<char>& send = host_sends.emplace_back(bytes);
      std::vector<char> want(bytes), after(bytes);
      char* d = static_cast<char*>(mem.Alloc(bytes));
      const uint64_t philox_seed = rng();
      for (int step = 0; step < (c.feedback ? 3 : 2); ++step) {
        FillTernaryInput(seed + 8 * static_cast<uint64_t>(k) + step, rank, c.dtype, count,
                         send.data());
        const sieveTernaryParams_t p =
            TernaryParams(philox_seed, static_cast<uint64_t>(step), block, mask, c.feedback);
        RANK_CHECK(sieveAllReduceTernary(send.data(), want.data(), count, c.dtype, c.op, &p, comm,
                                         nullptr) == sieveSuccess, "host: %s",
                   sieveGetLastError(comm));
        mem.Upload(d, send.data(), bytes);
        const Counts before = Read(rt.ops);
        mem.fake_stream().Pause(!blocking);  // the blocking path waits for the stream
        RANK_CHECK(sieveAllReduceTernary(d, d, count, c.dtype, c.op, &p, comm, mem.stream()) ==
                       sieveSuccess, "device: %s", sieveGetLastError(comm));
        mem.fake_stream().Push([&] {  // later work on the stream
          std::memcpy(after.data(), d, bytes);
          return true;
        });
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
        RANK_CHECK(blocking || std::memcmp(d, send.data(), bytes) == 0,
                   "case %d: the buffer changed before the stream ran", k);
        mem.fake_stream().Pause(false);
        mem.Synchronize();
        size_t first = 0;
        size_t bad = CountMismatches(after.data(), want.data(), count, es, &first);
        RANK_CHECK(bad == 0,
                   "case %d (%s, mask %d%%, feedback %d) step %d: %zu elements differ from the "
                   "host path (first %zu, seed %llu)",
                   k, TypeName(c.dtype), c.density_pct, c.feedback, step, bad, first,
                   static_cast<unsigned long long>(seed));
        const Counts now = Read(rt.ops);
        const size_t staged = now.to_host - before.to_host;
        const size_t back = now.to_device - before.to_device;
        // A mask's kept indices and bitmap go to the device once, on first use.
        const size_t mask_upload =
            c.density_pct > 0 && step == 0 ? elems * 4 + (count + 63) / 64 * 8 : 0;
        RANK_CHECK(staged == nblocks * 4 + wire && back == nblocks * 4 + sums + mask_upload,
                   "case %d step %d: %zu bytes staged and %zu back, expected %zu and %zu", k,
                   step, staged, back, nblocks * 4 + wire, nblocks * 4 + sums + mask_upload);
        const int masked = c.density_pct > 0, fb = c.feedback;
        // Masked: packed first; the dequantize scatters (no unpack pass).
        RANK_CHECK(now.packs - before.packs == masked && now.unpacks == before.unpacks &&
                       now.absmax - before.absmax == 1 &&
                       now.quantize - before.quantize == 1 - fb &&
                       now.quantize_fb - before.quantize_fb == fb &&
                       now.apply - before.apply == fb &&
                       now.dequantize - before.dequantize == 1 - masked &&
                       now.dequantize_scatter - before.dequantize_scatter == masked,
                   "case %d step %d: kernels launched", k, step);
      }
      ++k;
    }
    for (sieveMask_t m : masks) RANK_CHECK(sieveMaskDeregister(m) == sieveSuccess, "deregister");
    RANK_CHECK(sieveCommDestroy(comm) == sieveSuccess, "destroy");
    mem.Synchronize();  // runs the stream-ordered frees
  }
  // Residuals, masks' device copies and scratch: all returned.
  RANK_CHECK(rt.ops.device_live() == 0, "%zu device allocations left after destroy",
             rt.ops.device_live());
  return 0;
}

TEST(DeviceTernaryFakeMp, MaskedAndFeedbackStageOnlyCompressedData) {
  EXPECT_EQ(RunRanks(Spec(4, false), MaskedAndFeedback), "");
}
TEST(DeviceTernaryFakeMp, MaskedAndFeedbackStageOnlyCompressedDataBlocking) {
  EXPECT_EQ(RunRanks(Spec(2, true), MaskedAndFeedback), "");
}

// Rank 0 on device buffers, the others on host buffers, masked + ternary with
// error feedback over several steps: the same network operations in the same
// order, so they interoperate, and every rank gets the all-host result.
int DeviceAndHostRanksMix(int rank, int nranks, const sieveUniqueId& id) {
  ScopedFakeRuntime rt;
  FakeMemory mem(&rt);
  sieveComm_t comm = nullptr;
  RANK_CHECK(sieveCommInitRank(&comm, nranks, id, rank) == sieveSuccess, "init");
  std::mt19937_64 rng(SharedSeed(comm, rank));
  const size_t count = 9001 + 2 * (rng() % 3000), block = rng() % 600 + 1;
  std::vector<uint8_t> keep = RandomMask(rng, count, 35);
  sieveMask_t mask = nullptr;
  RANK_CHECK(sieveMaskRegister(comm, keep.data(), sieveMaskBytes, count, sieveMaskStrict, &mask) ==
                 sieveSuccess, "register");
  const sieveDataType_t t = sieveBfloat16;
  const size_t bytes = count * 2;
  // Two host buffers: the all-host reference run and this rank's part in the
  // mixed run keep separate residuals.
  std::vector<char> in(bytes), ref_in(bytes), want(bytes), got(bytes);
  char* d = static_cast<char*>(mem.Alloc(bytes));
  for (int step = 0; step < 3; ++step) {
    FillTernaryInput(rng(), rank, t, count, in.data());
    ref_in = in;
    const sieveTernaryParams_t p =
        TernaryParams(11, static_cast<uint64_t>(step), block, mask, 1);
    RANK_CHECK(sieveAllReduceTernary(ref_in.data(), want.data(), count, t, sieveAvg, &p, comm,
                                     nullptr) == sieveSuccess, "reference: %s",
               sieveGetLastError(comm));
    if (rank == 0) {
      mem.Upload(d, in.data(), bytes);
      RANK_CHECK(sieveAllReduceTernary(d, d, count, t, sieveAvg, &p, comm, mem.stream()) ==
                     sieveSuccess, "device: %s", sieveGetLastError(comm));
      mem.Synchronize();
      mem.Download(got.data(), d, bytes);
    } else {
      RANK_CHECK(sieveAllReduceTernary(in.data(), got.data(), count, t, sieveAvg, &p, comm,
                                       nullptr) == sieveSuccess, "host: %s",
                 sieveGetLastError(comm));
    }
    size_t first = 0;
    size_t bad = CountMismatches(got.data(), want.data(), count, 2, &first);
    RANK_CHECK(bad == 0, "step %d: %zu elements differ from the all-host run (first %zu)", step,
               bad, first);
  }
  RANK_CHECK(rank != 0 || rt.ops.ternary_quantize_feedback.load() == 3,
             "rank 0 did not quantize on the device");
  RANK_CHECK(sieveMaskDeregister(mask) == sieveSuccess, "deregister");
  RANK_CHECK(sieveCommDestroy(comm) == sieveSuccess, "destroy");
  return 0;
}

TEST(DeviceTernaryFakeMp, MaskedFeedbackDeviceRankWithHostRanks) {
  EXPECT_EQ(RunRanks(Spec(3, false), DeviceAndHostRanksMix), "");
}

// Two simulated hosts of two ranks: the hierarchical plan reduces dense sums
// inside hosts, so without error feedback it cannot quantize on the device
// (dense: the whole buffer staged; masked: the packed vector staged); error
// feedback always takes the flat plan, on the device. Results equal the host path.
int HierarchicalPlans(int rank, int nranks, const sieveUniqueId& id) {
  const std::string host = "fake-host-" + std::to_string(rank / 2);
  setenv("SIEVE_HOST_ID", host.c_str(), 1);
  ScopedFakeRuntime rt;
  FakeMemory mem(&rt);
  sieveComm_t comm = nullptr;
  RANK_CHECK(sieveCommInitRank(&comm, nranks, id, rank) == sieveSuccess, "init");
  std::mt19937_64 rng(SharedSeed(comm, rank));
  const size_t count = 6001 + 2 * (rng() % 3000), block = 256;
  std::vector<uint8_t> keep = RandomMask(rng, count, 25);
  size_t nnz = 0;
  for (uint8_t b : keep) nnz += b;
  sieveMask_t mask = nullptr;
  RANK_CHECK(sieveMaskRegister(comm, keep.data(), sieveMaskBytes, count, sieveMaskStrict, &mask) ==
                 sieveSuccess, "register");
  std::deque<std::vector<float>> host_sends;
  for (int variant = 0; variant < 4; ++variant) {
    const bool masked = variant & 1, feedback = variant & 2;
    std::vector<float>& in = host_sends.emplace_back(count);
    std::vector<float> want(count), got(count);
    float* d = static_cast<float*>(mem.Alloc(count * 4));
    for (int step = 0; step < 2; ++step) {
      FillTernaryInput(rng(), rank, sieveFloat32, count, in.data());
      const sieveTernaryParams_t p =
          TernaryParams(3, static_cast<uint64_t>(step), block, masked ? mask : nullptr, feedback);
      RANK_CHECK(sieveAllReduceTernary(in.data(), want.data(), count, sieveFloat32, sieveSum, &p,
                                       comm, nullptr) == sieveSuccess, "host: %s",
                 sieveGetLastError(comm));
      mem.Upload(d, in.data(), count * 4);
      const Counts before = Read(rt.ops);
      RANK_CHECK(sieveAllReduceTernary(d, d, count, sieveFloat32, sieveSum, &p, comm,
                                       mem.stream()) == sieveSuccess, "device: %s",
                 sieveGetLastError(comm));
      mem.Synchronize();
      mem.Download(got.data(), d, count * 4);
      size_t first = 0;
      size_t bad = CountMismatches(got.data(), want.data(), count, 4, &first);
      RANK_CHECK(bad == 0, "variant %d step %d: %zu elements differ from the host path (first %zu)",
                 variant, step, bad, first);
      const size_t elems = masked ? nnz : count;
      const size_t staged = Read(rt.ops).to_host - before.to_host;
      const size_t expect = feedback ? (elems + block - 1) / block * 4 + (elems + 3) / 4
                                     : elems * 4;  // packed (masked) or whole (dense)
      RANK_CHECK(staged == expect, "variant %d: %zu bytes staged, expected %zu", variant, staged,
                 expect);
    }
  }
  RANK_CHECK(sieveMaskDeregister(mask) == sieveSuccess, "deregister");
  RANK_CHECK(sieveCommDestroy(comm) == sieveSuccess, "destroy");
  return 0;
}

TEST(DeviceTernaryFakeMp, HierarchicalPlanStagesMoreAndFeedbackStaysFlat) {
  EXPECT_EQ(RunRanks(Spec(4, false), HierarchicalPlans), "");
}

}  // namespace
}  // namespace sieve_test
