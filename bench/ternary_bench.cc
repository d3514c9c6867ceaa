// sieve-ternary-bench: bytes per rank and time of one all-reduce of COUNT
// float32 for dense, ternary (ring with bit-growth partial sums) and the
// TernGrad-style alternative (all-gather of every rank's 2-bit vector, local sum).
// Run: sieve-run -n 4 sieve-ternary-bench [COUNT] [ITERS]
#include <stdio.h>
#include <stdlib.h>

#include <chrono>
#include <functional>
#include <vector>

#include "kernels/ternary.h"
#include "sieve.h"

namespace {

using sieve::kernels::DType;

struct Result {
  double ms = 0;
  double bytes = 0;  // sent by this rank per call
};

bool Check(sieveResult_t res, sieveComm_t comm, const char* what) {
  if (res == sieveSuccess) return true;
  fprintf(stderr, "%s failed: %s\n", what, sieveGetLastError(comm));
  return false;
}

// Runs fn once to warm up, then `iters` times; bytes and time per call.
bool Measure(sieveComm_t comm, int iters, const std::function<bool(int)>& fn, Result* out) {
  if (!fn(0)) return false;
  float token = 0;
  if (!Check(sieveAllReduce(&token, &token, 1, sieveFloat32, sieveSum, comm, nullptr), comm,
             "barrier"))
    return false;
  sieveCounters_t before, after;
  sieveCommGetCounters(comm, &before);
  auto start = std::chrono::steady_clock::now();
  for (int i = 1; i <= iters; ++i)
    if (!fn(i)) return false;
  auto stop = std::chrono::steady_clock::now();
  sieveCommGetCounters(comm, &after);
  out->ms = std::chrono::duration<double, std::milli>(stop - start).count() / iters;
  out->bytes = static_cast<double>(after.bytes_sent - before.bytes_sent) / iters;
  return true;
}

// TernGrad-style: agree on scales, pack own 2-bit vector, all-gather, sum locally.
bool AllGatherTernary(sieveComm_t comm, int rank, int n, const std::vector<float>& in,
                      uint64_t step, std::vector<float>* out) {
  const size_t count = in.size(), block = 2048, nb = (count + block - 1) / block;
  std::vector<float> scales(nb);
  sieve::kernels::TernaryAbsMax(DType::kFloat32, in.data(), count, block, scales.data());
  if (!Check(sieveAllReduce(scales.data(), scales.data(), nb, sieveFloat32, sieveMax, comm,
                            nullptr), comm, "scales"))
    return false;
  const size_t packed = sieve::kernels::TernaryPackedBytes(count, 2);
  std::vector<uint8_t> all(packed * n);
  sieve::kernels::PhiloxStream rng{1, static_cast<uint32_t>(rank), step};
  sieve::kernels::TernaryQuantizePack(DType::kFloat32, in.data(), 0, count, block, scales.data(),
                                      rng, 2, all.data() + packed * rank);
  if (!Check(sieveAllGather(all.data() + packed * rank, all.data(), packed, sieveUint8, comm,
                            nullptr), comm, "allgather"))
    return false;
  std::vector<int8_t> sums(count, 0);
  for (int r = 0; r < n; ++r)
    sieve::kernels::TernaryUnpack(sieve::kernels::TernaryWork::kInt8, all.data() + packed * r,
                                  count, 2, /*accumulate=*/true, sums.data());
  sieve::kernels::TernaryDequantize(DType::kFloat32, sieve::kernels::TernaryWork::kInt8,
                                    sums.data(), count, block, scales.data(), 1, out->data());
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  size_t count = argc > 1 ? strtoull(argv[1], nullptr, 10) : (size_t{64} << 20) / 4;
  int iters = argc > 2 ? atoi(argv[2]) : 5;
  sieveComm_t comm = nullptr;
  if (!Check(sieveCommInitFromEnv(&comm), nullptr, "init")) return 1;
  int rank = 0, n = 1;
  sieveCommUserRank(comm, &rank);
  sieveCommCount(comm, &n);
  std::vector<float> in(count), out(count);
  for (size_t i = 0; i < count; ++i)
    in[i] = static_cast<float>((i * 2654435761u + rank) % 2001) / 1000.0f - 1.0f;
  Result dense, ternary, gather;
  bool ok = Measure(comm, iters, [&](int) {
    return Check(sieveAllReduce(in.data(), out.data(), count, sieveFloat32, sieveSum, comm,
                                nullptr), comm, "dense");
  }, &dense);
  ok = ok && Measure(comm, iters, [&](int i) {
    sieveTernaryParams_t params = {1, static_cast<uint64_t>(i), 0, nullptr, 0};
    return Check(sieveAllReduceTernary(in.data(), out.data(), count, sieveFloat32, sieveSum,
                                       &params, comm, nullptr), comm, "ternary");
  }, &ternary);
  ok = ok && Measure(comm, iters, [&](int i) {
    return AllGatherTernary(comm, rank, n, in, static_cast<uint64_t>(i), &out);
  }, &gather);
  if (!ok) return 1;
  printf("n=%d count=%zu (%.1f MiB float32) iters=%d\n", n, count, count * 4.0 / (1 << 20), iters);
  printf("%-22s %14s %10s %9s\n", "mode", "bytes/rank", "ms/call", "vs dense");
  printf("%-22s %14.0f %10.2f %9.4f\n", "dense ring", dense.bytes, dense.ms, 1.0);
  printf("%-22s %14.0f %10.2f %9.4f\n", "ternary ring (ours)", ternary.bytes, ternary.ms,
         ternary.bytes / dense.bytes);
  printf("%-22s %14.0f %10.2f %9.4f\n", "ternary allgather", gather.bytes, gather.ms,
         gather.bytes / dense.bytes);
  sieveCommDestroy(comm);
  return 0;
}
