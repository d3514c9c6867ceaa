// Microbenchmarks of the CPU reduction kernels: bytes/s of out = a op b (a + b + out
// counted) from 64 KiB to 64 MiB per buffer, with the scalar reference for scale.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "kernels/masked_pack.h"
#include "kernels/reduce.h"
#include "kernels/ternary.h"

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

// Masked pack/unpack of a 64 MiB float32 buffer at density state.range(0)/100, against
// memcpy of the same 64 MiB: bytes/s counts the dense buffer in every case.
constexpr size_t kMaskedBytes = 64 << 20;

struct MaskedBuffers {
  explicit MaskedBuffers(int percent) : dense(kMaskedBytes / 4), out(kMaskedBytes / 4) {
    const size_t count = dense.size();
    bits.assign((count + 63) / 64, 0);
    uint64_t x = 88172645463325252ull;
    for (size_t j = 0; j < count; ++j) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;  // xorshift64
      dense[j] = static_cast<float>(j % 97);
      if (x % 100 >= static_cast<uint64_t>(percent)) continue;
      bits[j / 64] |= uint64_t{1} << (j % 64);
      idx.push_back(static_cast<uint32_t>(j));
    }
    packed.resize(idx.size() + 1);
  }
  std::vector<float> dense, out, packed;
  std::vector<uint64_t> bits;
  std::vector<uint32_t> idx;
};

void BM_MaskedPack64M(benchmark::State& state) {
  MaskedBuffers buf(static_cast<int>(state.range(0)));
  for (auto _ : state) {
    MaskedPack(4, buf.dense.data(), buf.idx.data(), buf.idx.size(), buf.packed.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * kMaskedBytes));
}

void BM_MaskedUnpack64M(benchmark::State& state) {
  MaskedBuffers buf(static_cast<int>(state.range(0)));
  for (auto _ : state) {
    MaskedUnpack(4, buf.packed.data(), buf.bits.data(), buf.dense.size(), buf.out.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * kMaskedBytes));
}

void BM_Memcpy64M(benchmark::State& state) {
  std::vector<char> src(kMaskedBytes, 1), dst(kMaskedBytes, 0);
  for (auto _ : state) {
    std::memcpy(dst.data(), src.data(), kMaskedBytes);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * kMaskedBytes));
}

// Ternary quantize + 2-bit pack of 64 MiB of float32 (the first hop's encode),
// counted in input bytes so it compares with memcpy of the same input.
void BM_TernaryQuantizePack64M(benchmark::State& state) {
  const size_t count = kMaskedBytes / sizeof(float), block = 2048;
  std::vector<float> in(count);
  for (size_t j = 0; j < count; ++j)
    in[j] = static_cast<float>((j * 2654435761u) % 2001) / 1000 - 1;
  std::vector<float> scales((count + block - 1) / block);
  TernaryAbsMax(DType::kFloat32, in.data(), count, block, scales.data());
  std::vector<uint8_t> wire(TernaryPackedBytes(count, 2));
  PhiloxStream rng{1, 0, 0};
  for (auto _ : state) {
    TernaryQuantizePack(DType::kFloat32, in.data(), 0, count, block, scales.data(), rng, 2,
                        wire.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * kMaskedBytes));
}

BENCHMARK(BM_Memcpy64M);
BENCHMARK(BM_TernaryQuantizePack64M);
BENCHMARK(BM_MaskedPack64M)->Arg(10)->Arg(50)->Arg(90);
BENCHMARK(BM_MaskedUnpack64M)->Arg(10)->Arg(50)->Arg(90);

}  // namespace
}  // namespace sieve::kernels

BENCHMARK_MAIN();
