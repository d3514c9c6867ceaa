// The kernels libsieve ships (the embedded module, launched by CudaDeviceOps
// exactly as the device paths launch them) beside a device-to-device copy in
// the same run. One table: kernel, bytes (of the float32 input), GB/s (input
// bytes per second), % of the copy's GB/s at that size. Medians of timed
// repetitions (CUDA events) after warm-ups. Usage: sieve-gpu-kernel-bench
// [MiB ...] (default 64 256). Exits 2 with "no CUDA device" where there is none.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "kernels/ternary.h"
#include "support/shipped_kernels.h"

namespace {

using sieve::kernels::DType;
using sieve::gpu::CudaDeviceOps;

constexpr int kWarmups = 3, kReps = 15;

// A launch through CudaDeviceOps: 0 on success, as the copy's cudaError_t.
int Ok(const sieve::Status& st) {
  if (!st.ok()) std::fprintf(stderr, "%s\n", st.message().c_str());
  return st.ok() ? 0 : 1;
}

double MedianMs(cudaStream_t s, const std::function<int()>& launch) {
  cudaEvent_t a, b;
  cudaEventCreate(&a);
  cudaEventCreate(&b);
  for (int i = 0; i < kWarmups; ++i) launch();
  std::vector<float> ms;
  for (int i = 0; i < kReps; ++i) {
    cudaEventRecord(a, s);
    if (launch() != 0) return -1;
    cudaEventRecord(b, s);
    cudaEventSynchronize(b);
    float t = 0;
    cudaEventElapsedTime(&t, a, b);
    ms.push_back(t);
  }
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

template <typename T>
T* Device(const std::vector<T>& host) {
  T* d = nullptr;
  if (cudaMalloc(&d, host.size() * sizeof(T) + 256) != cudaSuccess) return nullptr;
  cudaMemcpy(d, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice);
  return d;
}

void Row(const char* kernel, size_t bytes, double ms, double copy_gbs) {
  double gbs = ms > 0 ? bytes / (ms * 1e6) : 0;
  std::printf("| %-34s | %9zu MiB | %8.1f | %5.0f%% |\n", kernel, bytes >> 20, gbs,
              copy_gbs > 0 ? 100.0 * gbs / copy_gbs : 0.0);
}

int BenchSize(CudaDeviceOps& k, size_t mib) {
  const size_t n = (mib << 20) / 4, bytes = n * 4, block = 2048;
  std::mt19937 rng(1);
  std::normal_distribution<float> g(0, 1);
  std::vector<float> a(n), b(n);
  for (size_t i = 0; i < n; ++i) a[i] = g(rng), b[i] = g(rng);
  std::vector<uint32_t> idx;  // density 0.5
  std::vector<uint64_t> bits((n + 63) / 64, 0);
  for (size_t i = 0; i < n; ++i)
    if (rng() & 1) idx.push_back(static_cast<uint32_t>(i)), bits[i / 64] |= uint64_t{1} << (i % 64);
  float *da = Device(a), *db = Device(b), *dout = Device(std::vector<float>(n));
  uint32_t* didx = Device(idx);
  uint64_t* dbits = Device(bits);
  float* dscales = Device(std::vector<float>((n + block - 1) / block));
  std::vector<int32_t> zeros(n);
  int32_t* dsums = Device(zeros);
  if (!da || !db || !dout || !didx || !dbits || !dscales || !dsums) {
    std::printf("allocation of %zu MiB buffers failed\n", mib);
    return 1;
  }
  cudaStream_t s;
  cudaStreamCreate(&s);
  sieve::kernels::PhiloxStream philox{42, 0, 7};
  double copy_ms = MedianMs(s, [&] {
    return static_cast<int>(cudaMemcpyAsync(dout, da, bytes, cudaMemcpyDeviceToDevice, s));
  });
  double copy_gbs = bytes / (copy_ms * 1e6);
  Row("device-to-device copy", bytes, copy_ms, copy_gbs);
  Row("reduce sum float32 (a+b)", bytes, MedianMs(s, [&] {
        return Ok(k.Reduce(DType::kFloat32, sieve::kernels::RedOp::kSum, da, db, dout, n, s));
      }), copy_gbs);
  Row("masked pack (density 0.5)", bytes, MedianMs(s, [&] {
        return Ok(k.MaskedPack(4, da, didx, idx.size(), dout, s));
      }), copy_gbs);
  Row("masked unpack + zero-fill (0.5)", bytes, MedianMs(s, [&] {
        return Ok(k.MaskedUnpack(4, db, didx, idx.size(), dbits, n, dout, s));
      }), copy_gbs);
  Row("ternary block abs-max", bytes, MedianMs(s, [&] {
        return Ok(k.TernaryAbsMax(DType::kFloat32, da, nullptr, n, block, dscales, s));
      }), copy_gbs);
  Row("ternary quantize + 2-bit pack (fused)", bytes, MedianMs(s, [&] {
        return Ok(k.TernaryQuantize(DType::kFloat32, da, n, block, dscales, philox, 1, dout, s));
      }), copy_gbs);
  // The device masked+ternary encoder as libsieve runs it: pack the kept
  // elements, then quantize them (what a GPU rank stages: 2 bits each).
  Row("masked pack + ternary quantize (0.5)", bytes, MedianMs(s, [&] {
        int r = Ok(k.MaskedPack(4, da, didx, idx.size(), db, s));
        return r != 0 ? r
                      : Ok(k.TernaryQuantize(DType::kFloat32, db, idx.size(), block, dscales,
                                             philox, 1, dout, s));
      }), copy_gbs);
  // Error feedback on the device: g + e_prev (reads g and the residual,
  // writes both), then the quantize pass that also updates the residual.
  Row("ternary feedback g + e_prev", bytes, MedianMs(s, [&] {
        return Ok(k.TernaryFeedbackApply(DType::kFloat32, da, db, false, dout, n, s));
      }), copy_gbs);
  Row("ternary quantize + residual update", bytes, MedianMs(s, [&] {
        return Ok(k.TernaryQuantizeFeedback(DType::kFloat32, da, n, block, dscales, philox, 1,
                                            dout, db, s));
      }), copy_gbs);
  Row("ternary dequantize (3-bit sums)", bytes, MedianMs(s, [&] {
        return Ok(k.TernaryDequantize(DType::kFloat32, dsums, 3, n, block, dscales, 1, dout, s));
      }), copy_gbs);
  cudaError_t err = cudaStreamSynchronize(s);
  for (void* p : {static_cast<void*>(da), static_cast<void*>(db), static_cast<void*>(dout),
                  static_cast<void*>(didx), static_cast<void*>(dbits), static_cast<void*>(dscales),
                  static_cast<void*>(dsums)})
    cudaFree(p);
  cudaStreamDestroy(s);
  if (err != cudaSuccess) {
    std::printf("CUDA error: %s\n", cudaGetErrorString(err));
    return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::string why;
  CudaDeviceOps* k = sieve_test::ShippedKernels(&why);
  if (k == nullptr) {
    std::printf("skipped: no CUDA device (%s)\n", why.c_str());
    return 2;
  }
  cudaDeviceProp prop;
  cudaGetDeviceProperties(&prop, 0);
  std::printf("GPU kernels on %s (GB/s = input bytes / median time; %% of the D2D copy)\n\n",
              prop.name);
  std::printf("| %-34s | %13s | %8s | %6s |\n|---|---|---|---|\n", "kernel", "bytes", "GB/s",
              "% copy");
  std::vector<size_t> sizes;
  for (int i = 1; i < argc; ++i) sizes.push_back(std::strtoull(argv[i], nullptr, 10));
  if (sizes.empty()) sizes = {64, 256};
  for (size_t mib : sizes)
    if (BenchSize(*k, mib) != 0) return 1;
  return 0;
}
