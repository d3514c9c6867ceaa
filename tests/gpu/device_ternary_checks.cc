// Masked + ternary and error feedback on device buffers vs the host path.
#include <cstdio>
#include <deque>
#include <random>
#include <vector>

#include "gpu/device_check_ok.h"
#include "gpu/device_checks.h"
#include "support/reference.h"
#include "support/ternary_reference.h"

namespace sieve_test {

// Every kernel on the stream, only scales and wire staged: over several steps
// (each buffer's residual carried from call to call) the results equal the
// host path bit for bit. Fresh random odd sizes, blocks, Philox seeds and
// masks per run (rank 0 draws the seed, printed on failure); float32,
// float16, bfloat16, sum and avg, masks of several densities, in and out of place.
std::string TernaryMaskedFeedbackChecks(sieveComm_t comm, int rank, int n, DeviceMemory& mem) {
  uint64_t seed = 0;
  if (rank == 0) seed = (uint64_t{std::random_device{}()} << 32) | std::random_device{}();
  CHECK_OK(sieveBroadcast(&seed, &seed, 1, sieveUint64, 0, comm, nullptr), "seed broadcast");
  std::mt19937_64 rng(seed);  // the same draws on every rank
  struct Case {
    sieveDataType_t dtype;
    sieveRedOp_t op;
    int density_pct;  // 0: no mask
    bool feedback;
    bool in_place;
    int levels = 1;  // > 1: sieveAllReduceQuantized at that many levels
  };
  const Case cases[] = {
      {sieveFloat32, sieveSum, 30, false, false},   {sieveFloat16, sieveAvg, 5, false, true},
      {sieveBfloat16, sieveSum, 90, false, false},  {sieveFloat32, sieveAvg, 0, true, true},
      {sieveFloat16, sieveSum, 0, true, false},     {sieveBfloat16, sieveAvg, 0, true, false},
      {sieveFloat32, sieveSum, 50, true, false},    {sieveFloat16, sieveAvg, 2, true, true},
      {sieveBfloat16, sieveSum, 75, true, false},   {sieveFloat32, sieveAvg, 100, true, false},
      {sieveFloat32, sieveSum, 0, false, false, 7}, {sieveBfloat16, sieveAvg, 40, true, false, 127},
      {sieveFloat16, sieveAvg, 0, true, true, 3},
  };
  // Host send buffers live through every case: a residual is keyed by the
  // buffer's address, so no case may inherit an earlier one's.
  std::deque<std::vector<char>> host_sends;
  int k = 0;
  for (const Case& c : cases) {
    const size_t count = 1001 + 2 * (rng() % 15000);  // odd
    const size_t block = k % 3 == 0 ? 2048 : rng() % 700 + 1;
    const uint64_t philox_seed = rng();
    std::vector<uint8_t> keep(count, 1);
    if (c.density_pct > 0) {
      for (auto& b : keep) b = static_cast<int>(rng() % 100) < c.density_pct;
      keep[rng() % count] = 1;  // never empty
    }
    sieveMask_t mask = nullptr;
    if (c.density_pct > 0)
      CHECK_OK(sieveMaskRegister(comm, keep.data(), sieveMaskBytes, count, sieveMaskStrict, &mask),
               "ternary case %d: mask register", k);
    const size_t es = TypeSize(c.dtype), bytes = count * es;
    std::vector<char>& send = host_sends.emplace_back(bytes);
    std::vector<char> host_out(bytes), dev_out(bytes);
    char* d_send = static_cast<char*>(mem.Alloc(bytes));
    char* d_recv = c.in_place ? d_send : static_cast<char*>(mem.Alloc(bytes));
    for (int step = 0; step < (c.feedback ? 3 : 1); ++step) {
      FillTernaryInput(seed + 16 * static_cast<uint64_t>(k) + step, rank, c.dtype, count,
                       send.data());
      const sieveTernaryParams_t p =
          TernaryParams(philox_seed, static_cast<uint64_t>(step), block, mask, c.feedback);
      char what[200];
      std::snprintf(what, sizeof what,
                    "ternary L %d %s %s count %zu block %zu mask %d%% feedback %d step %d%s "
                    "(seed %llu)",
                    c.levels, TypeName(c.dtype), OpName(c.op), count, block, c.density_pct,
                    c.feedback, step, c.in_place ? " in place" : "",
                    static_cast<unsigned long long>(seed));
      auto all_reduce = [&](const void* in, void* out, sieveStream_t stream) {
        return c.levels == 1
                   ? sieveAllReduceTernary(in, out, count, c.dtype, c.op, &p, comm, stream)
                   : sieveAllReduceQuantized(in, out, count, c.dtype, c.op, c.levels, &p, comm,
                                             stream);
      };
      CHECK_OK(all_reduce(send.data(), host_out.data(), nullptr), "%s: host", what);
      mem.Upload(d_send, send.data(), bytes);
      CHECK_OK(all_reduce(d_send, d_recv, mem.stream()), "%s: device", what);
      mem.Synchronize();
      mem.Download(dev_out.data(), d_recv, bytes);
      size_t first = 0;
      size_t bad = CountMismatches(dev_out.data(), host_out.data(), count, es, &first);
      if (bad != 0)
        return std::string(what) + ": " + std::to_string(bad) +
               " elements differ from the host path (first at " + std::to_string(first) + ")";
    }
    if (mask != nullptr) CHECK_OK(sieveMaskDeregister(mask), "ternary case %d: deregister", k);
    ++k;
  }
  (void)n;
  return "";
}

}  // namespace sieve_test
