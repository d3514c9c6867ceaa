// Microbenchmarks of every CPU kernel family, each against memcpy of the same bytes in
// the same run. The yardstick: `bytes` is the dense buffer a kernel works on (one operand
// of a reduce, the dense input of a pack or quantize, the dense output of an unpack or
// dequantize), bytes_per_second counts it, and the counter `memcpy%` is
// 100 x (CPU time memcpy takes for those bytes, measured just before) / (kernel's time):
// 100% means the kernel gets through its buffer as fast as memcpy copies it.
//
// Families: reduce (a op b), avg division, coverage division (SDP/D2FT), masked pack (by
// index, or compressed through the bitmap) / gather+reduce (the first hop's partial sum) /
// unpack, ternary absmax / quantize+pack /
// quantize+add (partial sum) / pack / unpack+accumulate (partial-sum add) / unpack (final
// sums) / dequantize, with error feedback fused (absmax, quantize+pack, and one rank's whole
// encode with and without it), masked+ternary (absmax, quantize+pack and quantize+add
// through the bitmap, dequantize with scatter and zero-fill), and the split feedback passes
// the device path uses.
#include <benchmark/benchmark.h>
#include <time.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "kernels/coverage_average.h"
#include "kernels/cpu_isa.h"
#include "kernels/masked_pack.h"
#include "kernels/reduce.h"
#include "kernels/ternary.h"
#include "kernels/ternary_compress.h"
#include "kernels/ternary_feedback.h"
#include "kernels/ternary_simd.h"
#include "peer_perf.h"

namespace sieve::kernels {
namespace {

double ThreadCpuSeconds() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// CPU seconds of one memcpy of `bytes` between two warm buffers: best of enough repeats
// to fill ~20 ms (Google Benchmark's rates are per CPU second too). Cached per size.
double MemcpySeconds(size_t bytes) {
  static std::map<size_t, double> cache;
  auto it = cache.find(bytes);
  if (it != cache.end()) return it->second;
  std::vector<char> src(bytes, 1), dst(bytes, 0);
  std::memcpy(dst.data(), src.data(), bytes);
  double best = 1e30, spent = 0;
  for (int i = 0; i < 5 || spent < 0.02; ++i) {
    const double t0 = ThreadCpuSeconds();
    std::memcpy(dst.data(), src.data(), bytes);
    benchmark::ClobberMemory();
    const double t = ThreadCpuSeconds() - t0;
    best = std::min(best, t);
    spent += t;
  }
  return cache[bytes] = best;
}

// Runs `body` as the benchmark loop and sets bytes/s (the dense `bytes` per iteration) and
// memcpy% (see the top of the file), both from the loop's CPU time.
template <typename Fn>
void RunVsMemcpy(benchmark::State& state, size_t bytes, Fn&& body) {
  const double memcpy_s = MemcpySeconds(bytes);
  const double t0 = ThreadCpuSeconds();
  for (auto _ : state) {
    body();
    benchmark::ClobberMemory();
  }
  const double spent = ThreadCpuSeconds() - t0;
  const double iters = static_cast<double>(state.iterations());
  state.SetBytesProcessed(static_cast<int64_t>(iters * static_cast<double>(bytes)));
  state.counters["memcpy%"] = spent > 0 ? 100.0 * memcpy_s * iters / spent : 0;
}

// Small finite values (no NaN/subnormal special cases), varied so no branch is constant.
float Value(size_t j) { return static_cast<float>((j * 2654435761u) % 2001) / 1000 - 1; }

// A gradient's magnitude: block scales (abs-max) well away from 1, where the
// quantizers take their general path (a scale of exactly 1 skips the division).
float GradientValue(size_t j) { return Value(j) * 3.7e-3f; }

void FillAs(DType dtype, size_t n, unsigned char* p, float shift) {
  const size_t es = DTypeSize(dtype);
  for (size_t i = 0; i < n; ++i) {
    const float v = Value(i) + shift;
    uint16_t h;
    int32_t i32 = static_cast<int32_t>(v * 64);
    double d = v;
    unsigned char* q = p + i * es;
    switch (dtype) {
      case DType::kFloat16:
        h = FloatToHalf(v);
        std::memcpy(q, &h, 2);
        break;
      case DType::kBfloat16:
        h = FloatToBf16(v);
        std::memcpy(q, &h, 2);
        break;
      case DType::kFloat32:
        std::memcpy(q, &v, 4);
        break;
      case DType::kFloat64:
        std::memcpy(q, &d, 8);
        break;
      default:
        std::memcpy(q, &i32, es);
        break;  // low bytes on x86
    }
  }
}

// ---- reduce and avg division: `bytes` per operand, 64 KiB (L2) .. 64 MiB (DRAM).

// b_offset: b this many bytes past an aligned address, as a fragment in UCX's receive
// buffer is (+21 or +26 mod 64 over TCP) when the dense ring reduces from it.
template <typename Fn>
void RunReduce(benchmark::State& state, DType dtype, RedOp op, Fn fn, size_t b_offset = 0) {
  const size_t bytes = static_cast<size_t>(state.range(0));
  const size_t n = bytes / DTypeSize(dtype);
  std::vector<unsigned char> a(bytes), b(bytes + b_offset), out(bytes);
  FillAs(dtype, n, a.data(), 2.0f);
  FillAs(dtype, n, b.data() + b_offset, 0.5f);
  RunVsMemcpy(state, bytes, [&] { fn(dtype, op, a.data(), b.data() + b_offset, out.data(), n); });
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
void BM_ReduceFloat32SumMisaligned(benchmark::State& s) {
  RunReduce(s, DType::kFloat32, RedOp::kSum, Reduce, 21);
}
void BM_ReduceFloat16SumMisaligned(benchmark::State& s) {
  RunReduce(s, DType::kFloat16, RedOp::kSum, Reduce, 21);
}
void BM_ReduceInt32Sum(benchmark::State& s) { RunReduce(s, DType::kInt32, RedOp::kSum, Reduce); }
void BM_ReduceFloat64Max(benchmark::State& s) {
  RunReduce(s, DType::kFloat64, RedOp::kMax, Reduce);
}
void BM_ReferenceFloat32Sum(benchmark::State& s) {
  RunReduce(s, DType::kFloat32, RedOp::kSum, ReduceReference);
}

void BM_DivideByFloat32(benchmark::State& state) {
  const size_t bytes = static_cast<size_t>(state.range(0));
  std::vector<float> buf(bytes / 4);
  for (size_t j = 0; j < buf.size(); ++j) buf[j] = Value(j) + 2;
  RunVsMemcpy(state, bytes, [&] {
    DivideBy(DType::kFloat32, buf.data(), buf.size(), 1);  // /1 keeps the values steady
  });
}

// Coverage division of subnet averaging (SDP/D2FT), fused into the last combine:
// out = (a + b) / 3.
void BM_SumDivideFloat32(benchmark::State& state) {
  const size_t bytes = static_cast<size_t>(state.range(0));
  const size_t n = bytes / 4;
  std::vector<unsigned char> a(bytes), b(bytes), out(bytes);
  FillAs(DType::kFloat32, n, a.data(), 2.0f);
  FillAs(DType::kFloat32, n, b.data(), 0.5f);
  RunVsMemcpy(state, bytes,
              [&] { SumDivide(DType::kFloat32, a.data(), b.data(), out.data(), n, 3); });
}

void Sizes(benchmark::internal::Benchmark* b) { b->RangeMultiplier(4)->Range(64 << 10, 64 << 20); }

BENCHMARK(BM_ReduceFloat32Sum)->Apply(Sizes);
BENCHMARK(BM_ReduceFloat16Sum)->Apply(Sizes);
BENCHMARK(BM_ReduceBfloat16Sum)->Apply(Sizes);
BENCHMARK(BM_ReduceFloat32SumMisaligned)->Apply(Sizes);
BENCHMARK(BM_ReduceFloat16SumMisaligned)->Apply(Sizes);
BENCHMARK(BM_ReduceInt32Sum)->Apply(Sizes);
BENCHMARK(BM_ReduceFloat64Max)->Apply(Sizes);
BENCHMARK(BM_ReferenceFloat32Sum)->Apply(Sizes);
BENCHMARK(BM_DivideByFloat32)->Apply(Sizes);
BENCHMARK(BM_SumDivideFloat32)->Apply(Sizes);

// ---- masked: a float32 buffer of range(1) bytes (64 MiB or 1 MiB) at density
// range(0)/100; `bytes` = the dense buffer.
constexpr size_t kDenseBytes = 64 << 20;

struct MaskedBuffers {
  MaskedBuffers(int percent, size_t bytes) : dense(bytes / 4), out(bytes / 4) {
    const size_t count = dense.size();
    bits.assign((count + 63) / 64, 0);
    uint64_t x = 88172645463325252ull;
    for (size_t j = 0; j < count; ++j) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;  // xorshift64
      dense[j] = GradientValue(j);
      if (x % 100 >= static_cast<uint64_t>(percent)) continue;
      bits[j / 64] |= uint64_t{1} << (j % 64);
      idx.push_back(static_cast<uint32_t>(j));
    }
    packed.resize(idx.size() + 1);
    wire.assign(idx.size() + 1, 0.5f);
  }
  std::vector<float> dense, out, packed, wire;
  std::vector<uint64_t> bits;
  std::vector<uint32_t> idx;
};

void BM_MaskedPack(benchmark::State& state) {
  MaskedBuffers buf(static_cast<int>(state.range(0)), static_cast<size_t>(state.range(1)));
  RunVsMemcpy(state, buf.dense.size() * 4, [&] {
    MaskedPack(4, buf.dense.data(), buf.idx.data(), buf.idx.size(), buf.packed.data());
  });
}

// The same through the bitmap: what masked + ternary runs once per call.
void BM_MaskedCompress(benchmark::State& state) {
  MaskedBuffers buf(static_cast<int>(state.range(0)), static_cast<size_t>(state.range(1)));
  RunVsMemcpy(state, buf.dense.size() * 4, [&] {
    MaskedCompress(4, buf.dense.data(), buf.bits.data(), buf.dense.size(), buf.packed.data());
  });
}

// Partial-sum add of the masked ring's first hop: out[k] = in[idx[k]] + wire[k].
void BM_MaskedGatherReduce(benchmark::State& state) {
  MaskedBuffers buf(static_cast<int>(state.range(0)), static_cast<size_t>(state.range(1)));
  RunVsMemcpy(state, buf.dense.size() * 4, [&] {
    MaskedGatherReduce(DType::kFloat32, RedOp::kSum, buf.dense.data(), buf.idx.data(),
                       buf.wire.data(), buf.packed.data(), buf.idx.size());
  });
}

void BM_MaskedUnpack(benchmark::State& state) {
  MaskedBuffers buf(static_cast<int>(state.range(0)), static_cast<size_t>(state.range(1)));
  RunVsMemcpy(state, buf.dense.size() * 4, [&] {
    MaskedUnpack(4, buf.packed.data(), buf.bits.data(), buf.dense.size(), buf.out.data());
  });
}

void BM_Memcpy(benchmark::State& state) {
  const size_t bytes = static_cast<size_t>(state.range(0));
  std::vector<char> src(bytes, 1), dst(bytes, 0);
  RunVsMemcpy(state, bytes, [&] {
    std::memcpy(dst.data(), src.data(), bytes);
  });  // ~100% by construction: the yardstick's own noise
}

// Densities 10/50/90% at 64 MiB and 1 MiB.
void MaskedArgs(benchmark::internal::Benchmark* b) {
  for (int64_t bytes : {int64_t{1} << 20, int64_t{kDenseBytes}})
    for (int64_t percent : {10, 50, 90}) b->Args({percent, bytes});
}

BENCHMARK(BM_Memcpy)->Arg(1 << 20)->Arg(kDenseBytes);
BENCHMARK(BM_MaskedPack)->Apply(MaskedArgs);
BENCHMARK(BM_MaskedCompress)->Apply(MaskedArgs);
BENCHMARK(BM_MaskedGatherReduce)->Apply(MaskedArgs);
BENCHMARK(BM_MaskedUnpack)->Apply(MaskedArgs);

// ---- ternary: float32 input of range(0) bytes, block 2048, 4 ranks (partial sums of up
// to 4 in int8 work words, 3-bit wire after the first hop); `bytes` = the float32 buffer.
constexpr size_t kBlock = 2048;

struct TernaryBuffers {
  explicit TernaryBuffers(size_t bytes)
      : count(bytes / 4),
        in(count),
        scales((count + kBlock - 1) / kBlock),
        work(count),
        wire(TernaryPackedBytes(count, 3)),
        out(count) {
    for (size_t j = 0; j < count; ++j) in[j] = GradientValue(j);
    TernaryAbsMax(DType::kFloat32, in.data(), count, kBlock, scales.data());
    // Work holds partial sums in [-2, 2], as after two ranks.
    for (size_t j = 0; j < count; ++j) work[j] = static_cast<int8_t>(j % 5) - 2;
    TernaryPack(TernaryWork::kInt8, work.data(), count, 3, wire.data());
  }
  size_t count;
  std::vector<float> in, scales;
  std::vector<int8_t> work;
  std::vector<uint8_t> wire;
  std::vector<float> out;
  PhiloxStream rng{1, 0, 0};
};

void BM_TernaryAbsMax(benchmark::State& state) {
  TernaryBuffers t(static_cast<size_t>(state.range(0)));
  RunVsMemcpy(state, t.count * 4, [&] {
    TernaryAbsMax(DType::kFloat32, t.in.data(), t.count, kBlock, t.scales.data());
  });
}

// The Philox 4x32-10 words alone, as many as quantizing range(0) bytes of float32
// draws (one evaluation per eight elements), through the path the quantizers use here
// (AVX-512 where the CPU has it, else AVX2): the floor under every quantizer's time
// (bytes counted as the quantizers count theirs). BM_TernaryPhiloxAvx2 runs the AVX2
// path on an AVX-512 CPU too, to compare the two generators on one host.
void RunPhilox(benchmark::State& state, CpuIsa isa) {
  if (ActiveCpuIsa() < isa) {
    state.SkipWithError(isa == CpuIsa::kAvx512 ? "no AVX-512" : "no AVX2");
    return;
  }
  const size_t count = static_cast<size_t>(state.range(0)) / 4, batches = count / 256;
  std::vector<uint32_t> words(128 * batches);
  const PhiloxStream rng{1, 0, 0};
  const auto words_of = isa == CpuIsa::kAvx512 ? simd::PhiloxWordsAvx512 : simd::PhiloxWordsAvx2;
  RunVsMemcpy(state, count * 4, [&] { words_of(rng, 0, batches, words.data()); });
}
void BM_TernaryPhilox(benchmark::State& state) {
  RunPhilox(state, ActiveCpuIsa() >= CpuIsa::kAvx512 ? CpuIsa::kAvx512 : CpuIsa::kAvx2);
}
void BM_TernaryPhiloxAvx2(benchmark::State& state) { RunPhilox(state, CpuIsa::kAvx2); }

void BM_TernaryQuantizePack(benchmark::State& state) {
  TernaryBuffers t(static_cast<size_t>(state.range(0)));
  RunVsMemcpy(state, t.count * 4, [&] {
    TernaryQuantizePack(DType::kFloat32, t.in.data(), 0, t.count, kBlock, t.scales.data(), t.rng, 2,
                        t.wire.data());
  });
}

// Partial-sum add at a middle hop: work = q(in) + unpack_3(wire).
void BM_TernaryQuantizeAdd(benchmark::State& state) {
  TernaryBuffers t(static_cast<size_t>(state.range(0)));
  std::vector<uint8_t> wire = t.wire;
  RunVsMemcpy(state, t.count * 4, [&] {
    TernaryQuantizeAdd(DType::kFloat32, t.in.data(), 0, t.count, kBlock, t.scales.data(), t.rng,
                       wire.data(), 3, TernaryWork::kInt8, t.work.data());
  });
}

void BM_TernaryPack(benchmark::State& state) {
  TernaryBuffers t(static_cast<size_t>(state.range(0)));
  RunVsMemcpy(state, t.count * 4,
              [&] { TernaryPack(TernaryWork::kInt8, t.work.data(), t.count, 3, t.wire.data()); });
}

// Partial-sum add of the all-gather/reduce side: work += unpack_3(wire).
void BM_TernaryUnpackAccumulate(benchmark::State& state) {
  TernaryBuffers t(static_cast<size_t>(state.range(0)));
  RunVsMemcpy(state, t.count * 4, [&] {
    TernaryUnpack(TernaryWork::kInt8, t.wire.data(), t.count, 3, true, t.work.data());
  });
}

// Into a 64-byte aligned output, as a PyTorch tensor is (the streaming stores need the
// alignment). The average over 4 ranks (divisor 4: a multiply); BM_TernaryDequantizeBy3
// over 3 (a divisor that is not a power of two: a division, or the AVX-512 table of its
// values).
void RunDequantize(benchmark::State& state, int divisor, OutputStores stores) {
  TernaryBuffers t(static_cast<size_t>(state.range(0)));
  PeerBuffer<float> out = PeerBufferOf<float>(t.count * 4);
  RunVsMemcpy(state, t.count * 4, [&] {
    TernaryDequantizeRange(DType::kFloat32, TernaryWork::kInt8, t.work.data(), 0, t.count, kBlock,
                           t.scales.data(), divisor, out.get(), stores);
  });
}
void BM_TernaryDequantize(benchmark::State& state) {
  RunDequantize(state, 4, OutputStores::kCached);
}
void BM_TernaryDequantizeBy3(benchmark::State& state) {
  RunDequantize(state, 3, OutputStores::kCached);
}
void BM_TernaryDequantizeMisaligned(benchmark::State& state) {
  TernaryBuffers t(static_cast<size_t>(state.range(0)));
  PeerBuffer<float> out = PeerBufferOf<float>((t.count + 16) * 4);
  RunVsMemcpy(state, t.count * 4, [&] {
    TernaryDequantizeRange(DType::kFloat32, TernaryWork::kInt8, t.work.data(), 0, t.count, kBlock,
                           t.scales.data(), 4, out.get() + 4, OutputStores::kCached);
  });
}
void BM_TernaryDequantizeStreaming(benchmark::State& state) {
  RunDequantize(state, 4, OutputStores::kStreaming);
}

// Error feedback as the host all-reduce runs it: fused into the abs-max (reads the
// residual) and into quantize + pack (reads and rewrites it), no separate pass.
void BM_TernaryAbsMaxFeedback(benchmark::State& state) {
  TernaryBuffers t(static_cast<size_t>(state.range(0)));
  std::vector<float> residual(t.count, 0.01f);
  TernarySource src = TernarySourceOf(DType::kFloat32, t.in.data(), nullptr, kBlock, nullptr);
  src.residual = residual.data();
  RunVsMemcpy(state, t.count * 4, [&] { TernaryAbsMax(src, t.count, t.scales.data()); });
}

// A bfloat16 gradient (staged to float32 batch by batch); bytes = the bfloat16 buffer.
void BM_TernaryQuantizePackBf16(benchmark::State& state) {
  TernaryBuffers t(static_cast<size_t>(state.range(0)) * 2);
  std::vector<uint16_t> in(t.count);
  for (size_t j = 0; j < t.count; ++j) in[j] = FloatToBf16(t.in[j]);
  TernaryAbsMax(DType::kBfloat16, in.data(), t.count, kBlock, t.scales.data());
  RunVsMemcpy(state, t.count * 2, [&] {
    TernaryQuantizePack(DType::kBfloat16, in.data(), 0, t.count, kBlock, t.scales.data(), t.rng, 2,
                        t.wire.data());
  });
}

void BM_TernaryQuantizePackFeedback(benchmark::State& state) {
  TernaryBuffers t(static_cast<size_t>(state.range(0)));
  std::vector<float> residual(t.count, 0.0f);
  TernarySource src =
      TernarySourceOf(DType::kFloat32, t.in.data(), nullptr, kBlock, t.scales.data(), t.rng);
  src.residual = residual.data();
  // The residual evolves call to call as in training (bounded: e stays within the scale).
  RunVsMemcpy(state, t.count * 4, [&] { TernaryQuantizePack(src, 0, t.count, 2, t.wire.data()); });
}

// What error feedback adds to one rank's encode: abs-max + quantize + pack, without
// and with the residual (the decode side is the same either way).
void BM_TernaryEncode(benchmark::State& state) {
  TernaryBuffers t(static_cast<size_t>(state.range(0)));
  const bool feedback = state.range(1) != 0;
  std::vector<float> residual(t.count, 0.0f);
  TernarySource src =
      TernarySourceOf(DType::kFloat32, t.in.data(), nullptr, kBlock, t.scales.data(), t.rng);
  if (feedback) src.residual = residual.data();
  RunVsMemcpy(state, t.count * 4, [&] {
    TernaryAbsMax(src, t.count, t.scales.data());
    TernaryQuantizePack(src, 0, t.count, 2, t.wire.data());
  });
}

// The memory floor of a quantizing pass, next to BM_TernaryEncode: only its bytes moved,
// nothing computed, in the widest vectors the CPU has (target_clones), a line of each
// buffer asked for 4 KiB ahead as the quantizers do. range(1) = 0: the input read once
// (the pass without error feedback); 1: the input and the residual read and the residual
// written (error feedback's one extra read and write). At 64 MiB `/1` is the least a
// quantizing pass with error feedback can take, however well its compute hides under its
// memory traffic (docs/bench/pipeline.md, stop 46).
using Line = uint32_t __attribute__((vector_size(64)));  // a cache line: one zmm, 2 ymm, 4 xmm
__attribute__((target_clones("avx512f", "avx2", "default"))) uint32_t StreamRead(const uint32_t* in,
                                                                                 size_t count) {
  Line any{}, v;
  for (size_t j = 0; j < count; j += 16) {
    if (j + 1024 < count) __builtin_prefetch(in + j + 1024);
    std::memcpy(&v, in + j, sizeof v);
    any |= v;
  }
  uint32_t all = 0;
  for (int k = 0; k < 16; ++k) all |= any[k];
  return all;
}
__attribute__((target_clones("avx512f", "avx2", "default"))) void StreamFeedback(const uint32_t* in,
                                                                                 uint32_t* residual,
                                                                                 size_t count) {
  Line a, b;
  for (size_t j = 0; j < count; j += 16) {
    if (j + 1024 < count) {
      __builtin_prefetch(in + j + 1024);
      __builtin_prefetch(residual + j + 1024);
    }
    std::memcpy(&a, in + j, sizeof a);
    std::memcpy(&b, residual + j, sizeof b);
    b += a;
    std::memcpy(residual + j, &b, sizeof b);
  }
}

void BM_StreamFloor(benchmark::State& state) {
  const size_t count = static_cast<size_t>(state.range(0)) / 4;  // a multiple of 16: lines
  const bool feedback = state.range(1) != 0;
  std::vector<uint32_t> in(count), residual(feedback ? count : 0);
  for (size_t j = 0; j < count; ++j) in[j] = static_cast<uint32_t>(j * 2654435761u);
  RunVsMemcpy(state, count * 4, [&] {
    if (feedback) {
      StreamFeedback(in.data(), residual.data(), count);
    } else {
      benchmark::DoNotOptimize(StreamRead(in.data(), count));
    }
  });
}

// L-level quantization (levels mode, L = range(1)): quantize + pack into TernaryBits(L)
// bits, and quantize + add to the partial sums of one more rank (TernaryBits(2L) bits).
// range(2) = 1: with error feedback (a residual per element, read and rewritten).
void BM_LevelsQuantizePack(benchmark::State& state) {
  TernaryBuffers t(static_cast<size_t>(state.range(0)));
  const int levels = static_cast<int>(state.range(1));
  std::vector<float> residual(state.range(2) != 0 ? t.count : 0, 0.0f);
  TernarySource src =
      TernarySourceOf(DType::kFloat32, t.in.data(), nullptr, kBlock, t.scales.data(), t.rng);
  src.levels = levels;
  if (!residual.empty()) src.residual = residual.data();
  std::vector<uint8_t> wire(TernaryPackedBytes(t.count, 8));
  RunVsMemcpy(state, t.count * 4, [&] {
    TernaryQuantizePack(src, 0, t.count, TernaryBits(levels), wire.data());
  });
}

void BM_LevelsQuantizeAdd(benchmark::State& state) {
  TernaryBuffers t(static_cast<size_t>(state.range(0)));
  const int levels = static_cast<int>(state.range(1));
  TernarySource src =
      TernarySourceOf(DType::kFloat32, t.in.data(), nullptr, kBlock, t.scales.data(), t.rng);
  src.levels = levels;
  const int w = TernaryBits(levels);
  std::vector<uint8_t> wire(TernaryPackedBytes(t.count, 8));
  TernaryQuantizePack(src, 0, t.count, w, wire.data());
  RunVsMemcpy(state, t.count * 4, [&] {
    TernaryQuantizeAdd(src, 0, t.count, wire.data(), w, TernaryWork::kInt8, t.work.data());
  });
}

// The split form of the device path (kept for it): add-and-round, then re-quantize.
void BM_TernaryFeedbackApply(benchmark::State& state) {
  TernaryBuffers t(static_cast<size_t>(state.range(0)));
  std::vector<float> residual(t.count, 0.0f);
  RunVsMemcpy(state, t.count * 4, [&] {
    TernaryFeedbackApply(DType::kFloat32, t.in.data(), residual.data(), t.out.data(), t.count);
  });
}

void BM_TernaryFeedbackUpdate(benchmark::State& state) {
  TernaryBuffers t(static_cast<size_t>(state.range(0)));
  std::vector<float> residual(t.in);
  RunVsMemcpy(state, t.count * 4, [&] {
    TernaryFeedbackUpdate(DType::kFloat32, t.in.data(), t.count, kBlock, t.scales.data(), t.rng,
                          residual.data());
  });
}

// The all-gather's receive: the final sums (4 ranks: 4 bits) into work.
void BM_TernaryUnpack(benchmark::State& state) {
  TernaryBuffers t(static_cast<size_t>(state.range(0)));
  std::vector<uint8_t> wire(TernaryPackedBytes(t.count, 4), 0x3c);
  RunVsMemcpy(state, t.count * 4, [&] {
    TernaryUnpack(TernaryWork::kInt8, wire.data(), t.count, 4, false, t.work.data());
  });
}

// The one-shot's decode on 4 ranks: four 2-bit images (one contribution each) into
// the float32 output. Unfused, as before stop 30: LoadWire (unpack the first into
// work), three unpack-adds, then the dequantize, each a pass over the range; fused:
// TernaryGatherDecode, one pass. Bytes: the float32 output (count * 4).
struct GatherDecodeBuffers {
  explicit GatherDecodeBuffers(size_t elems) : count(elems), work(elems), out(elems) {
    scales.resize((count + kBlock - 1) / kBlock);
    for (size_t b = 0; b < scales.size(); ++b) scales[b] = 0.5f + static_cast<float>(b % 7);
    std::vector<int32_t> q(count);
    for (int r = 0; r < kRanks; ++r) {
      for (size_t j = 0; j < count; ++j) q[j] = static_cast<int32_t>((j * 7 + r * 3) % 3) - 1;
      images[r].resize(TernaryPackedBytes(count, 2));
      TernaryPackReference(q.data(), count, 2, images[r].data());
      wires[r] = images[r].data();
    }
  }
  static constexpr int kRanks = 4;
  size_t count;
  std::vector<float> scales;
  std::vector<uint8_t> images[kRanks];
  const void* wires[kRanks];
  std::vector<int8_t> work;
  std::vector<float> out;
};

void BM_TernaryGatherDecodeUnfused(benchmark::State& state) {
  GatherDecodeBuffers g(static_cast<size_t>(state.range(0)));
  RunVsMemcpy(state, g.count * 4, [&] {
    for (int r = 0; r < GatherDecodeBuffers::kRanks; ++r)
      TernaryUnpack(TernaryWork::kInt8, g.wires[r], g.count, 2, r > 0, g.work.data());
    TernaryDequantize(DType::kFloat32, TernaryWork::kInt8, g.work.data(), g.count, kBlock,
                      g.scales.data(), 4, g.out.data());
  });
}

void BM_TernaryGatherDecode(benchmark::State& state) {
  GatherDecodeBuffers g(static_cast<size_t>(state.range(0)));
  RunVsMemcpy(state, g.count * 4, [&] {
    TernaryGatherDecode(DType::kFloat32, TernaryWork::kInt8, g.wires, GatherDecodeBuffers::kRanks,
                        2, 0, g.count, kBlock, g.scales.data(), 4, g.out.data());
  });
}

// Masked + ternary, fused: the first hop gathers the kept elements (density 50%)
// inside quantize + pack (+ add), the last hop dequantizes into the dense output
// with unpack and zero-fill; `bytes` = the dense float32 buffer. The source
// carries the bitmap, as the all-reduce's does.
TernarySource MaskedSource(const MaskedBuffers& buf, const float* scales) {
  TernarySource src = TernarySourceOf(DType::kFloat32, buf.dense.data(), buf.idx.data(), kBlock,
                                      scales, PhiloxStream{1, 0, 0});
  src.bits = buf.bits.data();
  return src;
}

void BM_TernaryQuantizePackMasked(benchmark::State& state) {
  MaskedBuffers buf(static_cast<int>(state.range(0)), static_cast<size_t>(state.range(1)));
  const size_t nnz = buf.idx.size();
  std::vector<float> scales((nnz + kBlock - 1) / kBlock + 1);
  const TernarySource src = MaskedSource(buf, scales.data());
  TernaryAbsMax(src, nnz, scales.data());
  std::vector<uint8_t> wire(TernaryPackedBytes(nnz, 2) + 1);
  RunVsMemcpy(state, buf.dense.size() * 4, [&] { TernaryQuantizePack(src, 0, nnz, 2, wire.data()); });
}

// The ring's other first hops: quantize the kept elements and add 3-bit partial sums.
void BM_TernaryQuantizeAddMasked(benchmark::State& state) {
  MaskedBuffers buf(static_cast<int>(state.range(0)), static_cast<size_t>(state.range(1)));
  const size_t nnz = buf.idx.size();
  std::vector<float> scales((nnz + kBlock - 1) / kBlock + 1);
  const TernarySource src = MaskedSource(buf, scales.data());
  TernaryAbsMax(src, nnz, scales.data());
  std::vector<uint8_t> wire(TernaryPackedBytes(nnz, 3) + 1, 0x49);
  std::vector<int8_t> work(nnz + 1);
  RunVsMemcpy(state, buf.dense.size() * 4, [&] {
    TernaryQuantizeAdd(src, 0, nnz, wire.data(), 3, TernaryWork::kInt8, work.data());
  });
}

void BM_TernaryAbsMaxMasked(benchmark::State& state) {
  MaskedBuffers buf(static_cast<int>(state.range(0)), static_cast<size_t>(state.range(1)));
  const size_t nnz = buf.idx.size();
  std::vector<float> scales((nnz + kBlock - 1) / kBlock + 1);
  const TernarySource src = MaskedSource(buf, nullptr);
  RunVsMemcpy(state, buf.dense.size() * 4, [&] { TernaryAbsMax(src, nnz, scales.data()); });
}

// The masked call's first pass: the gather and the block abs-max of what it
// gathered, as two kernels (/0: the packed vector read back) or fused (/1).
void BM_TernaryCompressAbsMax(benchmark::State& state) {
  MaskedBuffers buf(static_cast<int>(state.range(0)), static_cast<size_t>(state.range(1)));
  const size_t nnz = buf.idx.size(), count = buf.dense.size();
  std::vector<float> scales((nnz + kBlock - 1) / kBlock + 1);
  const TernarySource src = TernarySourceOf(DType::kFloat32, buf.dense.data(), nullptr, kBlock,
                                            nullptr);
  const TernarySource packed = TernarySourceOf(DType::kFloat32, buf.packed.data(), nullptr,
                                               kBlock, nullptr);
  const bool fused = state.range(2) != 0;
  RunVsMemcpy(state, count * 4, [&] {
    if (fused) {
      TernaryCompressAbsMax(src, buf.bits.data(), count, buf.packed.data(), scales.data());
    } else {
      MaskedCompress(4, buf.dense.data(), buf.bits.data(), count, buf.packed.data());
      TernaryAbsMax(packed, nnz, scales.data());
    }
  });
}

void RunDequantizeScatter(benchmark::State& state, OutputStores stores) {
  MaskedBuffers buf(static_cast<int>(state.range(0)), static_cast<size_t>(state.range(1)));
  const size_t nnz = buf.idx.size();
  std::vector<float> scales((nnz + kBlock - 1) / kBlock + 1, 0.5f);
  std::vector<int8_t> sums(nnz + 1);
  for (size_t k = 0; k < nnz; ++k) sums[k] = static_cast<int8_t>(k % 9) - 4;
  PeerBuffer<float> out = PeerBufferOf<float>(buf.dense.size() * 4);
  RunVsMemcpy(state, buf.dense.size() * 4, [&] {
    TernaryDequantizeScatter(DType::kFloat32, TernaryWork::kInt8, sums.data(), 0, kBlock,
                             scales.data(), 4, buf.bits.data(), 0, buf.dense.size(), out.get(),
                             stores);
  });
}
void BM_TernaryDequantizeScatter(benchmark::State& state) {
  RunDequantizeScatter(state, OutputStores::kCached);
}
void BM_TernaryDequantizeScatterStreaming(benchmark::State& state) {
  RunDequantizeScatter(state, OutputStores::kStreaming);
}

void TernarySizes(benchmark::internal::Benchmark* b) { b->Arg(1 << 20)->Arg(kDenseBytes); }
void MaskedTernaryArgs(benchmark::internal::Benchmark* b) {
  b->Args({50, 1 << 20})->Args({50, kDenseBytes});
}

BENCHMARK(BM_TernaryAbsMax)->Apply(TernarySizes);
BENCHMARK(BM_TernaryAbsMaxFeedback)->Apply(TernarySizes);
BENCHMARK(BM_TernaryQuantizePack)->Apply(TernarySizes);
BENCHMARK(BM_TernaryQuantizePackFeedback)->Apply(TernarySizes);
BENCHMARK(BM_TernaryQuantizePackBf16)->Apply(TernarySizes);
BENCHMARK(BM_TernaryEncode)->Args({1 << 20, 0})->Args({1 << 20, 1})->Args({kDenseBytes, 0})
    ->Args({kDenseBytes, 1});
BENCHMARK(BM_StreamFloor)
    ->Args({1 << 20, 0})
    ->Args({1 << 20, 1})
    ->Args({kDenseBytes, 0})
    ->Args({kDenseBytes, 1});
BENCHMARK(BM_TernaryAbsMaxMasked)->Apply(MaskedTernaryArgs);
BENCHMARK(BM_TernaryCompressAbsMax)
    ->Args({50, 1 << 20, 0})->Args({50, 1 << 20, 1})
    ->Args({50, kDenseBytes, 0})->Args({50, kDenseBytes, 1});
BENCHMARK(BM_TernaryQuantizePackMasked)->Apply(MaskedTernaryArgs);
BENCHMARK(BM_TernaryQuantizeAddMasked)->Apply(MaskedTernaryArgs);
BENCHMARK(BM_TernaryDequantizeScatter)->Apply(MaskedTernaryArgs);
BENCHMARK(BM_TernaryDequantizeScatterStreaming)->Apply(MaskedTernaryArgs);
BENCHMARK(BM_TernaryPhilox)->Apply(TernarySizes);
BENCHMARK(BM_TernaryPhiloxAvx2)->Apply(TernarySizes);
BENCHMARK(BM_TernaryQuantizeAdd)->Apply(TernarySizes);
BENCHMARK(BM_TernaryPack)->Apply(TernarySizes);
BENCHMARK(BM_TernaryUnpackAccumulate)->Apply(TernarySizes);
BENCHMARK(BM_TernaryUnpack)->Apply(TernarySizes);
BENCHMARK(BM_TernaryDequantize)->Apply(TernarySizes);
BENCHMARK(BM_TernaryDequantizeBy3)->Apply(TernarySizes);
BENCHMARK(BM_TernaryDequantizeStreaming)->Apply(TernarySizes);
BENCHMARK(BM_TernaryDequantizeMisaligned)->Apply(TernarySizes);
BENCHMARK(BM_TernaryGatherDecodeUnfused)->Arg(1 << 20)->Arg(16 << 20);
BENCHMARK(BM_TernaryGatherDecode)->Arg(1 << 20)->Arg(16 << 20);
BENCHMARK(BM_TernaryFeedbackApply)->Apply(TernarySizes);
BENCHMARK(BM_TernaryFeedbackUpdate)->Apply(TernarySizes);
BENCHMARK(BM_LevelsQuantizePack)
    ->Args({1 << 20, 4, 0})
    ->Args({kDenseBytes, 4, 0})
    ->Args({1 << 20, 7, 1})
    ->Args({kDenseBytes, 7, 1});
BENCHMARK(BM_LevelsQuantizeAdd)->Args({1 << 20, 4})->Args({kDenseBytes, 4});

}  // namespace
}  // namespace sieve::kernels

// SIEVE_BENCH_CPU_ISA=avx2|portable caps the kernels' instruction set, so that an AVX-512
// host also measures the paths of CPUs without it (unset or avx512: the best the CPU has).
int main(int argc, char** argv) {
  using sieve::kernels::CpuIsa;
  if (const char* cap = std::getenv("SIEVE_BENCH_CPU_ISA"); cap != nullptr && *cap != '\0') {
    const std::string name(cap);
    if (name != "avx512" && name != "avx2" && name != "portable") {
      std::fprintf(stderr, "SIEVE_BENCH_CPU_ISA=%s: expected avx512, avx2 or portable\n", cap);
      return 2;
    }
    sieve::kernels::CapCpuIsa(name == "avx512" ? CpuIsa::kAvx512
                              : name == "avx2" ? CpuIsa::kAvx2
                                               : CpuIsa::kPortable);
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
