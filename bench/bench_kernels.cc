// Microbenchmarks of the CPU reduction kernels: bytes/s of out = a op b (a + b + out
// counted) from 64 KiB to 64 MiB per buffer, with the scalar reference for scale.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "kernels/reduce.h"

namespace sieve::kernels {
namespace {

// Three buffers of `bytes` each, holding small finite values of `dtype` (so no float
// path runs into NaN/subnormal special cases).
struct Buffers {
  Buffers(DType dtype, size_t bytes) : a(bytes), b(bytes), out(bytes) {
    const size_t es = DTypeSize(dtype);
    for (size_t i = 0; i < bytes / es; ++i) {
      const float v = static_cast<float>(i % 13) * 0.25f + 1.0f;
      Put(dtype, a.data() + i * es, v);
      Put(dtype, b.data() + i * es, 2.0f - v / 8);
    }
  }
  static void Put(DType dtype, unsigned char* p, float v) {
    uint16_t h;
    int32_t i32 = static_cast<int32_t>(v * 4);
    double d = v;
    switch (dtype) {
      case DType::kFloat16:
        h = FloatToHalf(v);
        std::memcpy(p, &h, 2);
        break;
      case DType::kBfloat16:
        h = FloatToBf16(v);
        std::memcpy(p, &h, 2);
        break;
      case DType::kFloat32:
        std::memcpy(p, &v, 4);
        break;
      case DType::kFloat64:
        std::memcpy(p, &d, 8);
        break;
      default:
        std::memcpy(p, &i32, DTypeSize(dtype));
        break;  // low bytes on x86
    }
  }
  std::vector<unsigned char> a, b, out;
};

template <typename Fn>
void RunReduce(benchmark::State& state, DType dtype, RedOp op, Fn fn) {
  const size_t bytes = static_cast<size_t>(state.range(0));
  Buffers buf(dtype, bytes);
  const size_t n = bytes / DTypeSize(dtype);
  for (auto _ : state) {
    fn(dtype, op, buf.a.data(), buf.b.data(), buf.out.data(), n);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * 3 *
                          static_cast<int64_t>(bytes));
}

void BM_ReduceFloat32Sum(benchmark::State& s) {
  RunReduce(s, DType::kFloat32, RedOp::kSum, Reduce);
}
void BM_ReduceFloat16Sum(benchmark::State& s) {
  RunReduce(s, DType::kFloat16, RedOp::kSum, Reduce);
}
void BM_ReduceBfloat16Sum(benchmark::State& s) {
  RunReduce(s, DType::kBfloat16, RedOp::kSum, Reduce);
}
void BM_ReduceInt32Sum(benchmark::State& s) { RunReduce(s, DType::kInt32, RedOp::kSum, Reduce); }
void BM_ReduceFloat64Max(benchmark::State& s) {
  RunReduce(s, DType::kFloat64, RedOp::kMax, Reduce);
}
void BM_ReferenceFloat32Sum(benchmark::State& s) {
  RunReduce(s, DType::kFloat32, RedOp::kSum, ReduceReference);
}

// Bytes per buffer: 64 KiB (in L2) .. 64 MiB (DRAM-bound).
void Sizes(benchmark::internal::Benchmark* b) { b->RangeMultiplier(4)->Range(64 << 10, 64 << 20); }

BENCHMARK(BM_ReduceFloat32Sum)->Apply(Sizes);
BENCHMARK(BM_ReduceFloat16Sum)->Apply(Sizes);
BENCHMARK(BM_ReduceBfloat16Sum)->Apply(Sizes);
BENCHMARK(BM_ReduceInt32Sum)->Apply(Sizes);
BENCHMARK(BM_ReduceFloat64Max)->Apply(Sizes);
BENCHMARK(BM_ReferenceFloat32Sum)->Apply(Sizes);

}  // namespace
}  // namespace sieve::kernels

BENCHMARK_MAIN();
