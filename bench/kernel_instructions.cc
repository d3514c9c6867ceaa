// Instruction counts of the ternary and masked CPU kernels, independent of the
// machine's load: each kernel runs 5 times on 2^18 float32 elements inside a
// RunKernel_* function (mask density 50%), for
//   valgrind --tool=callgrind --toggle-collect='*RunKernel_*'
//            build/bench/sieve-kernel-instructions
// then callgrind_annotate --inclusive=yes; divide by 5 * 2^18 for instructions per dense
// element. Valgrind has no AVX-512, so this counts the AVX2 paths. RankDense / RankMasked
// are one rank's kernels in a 4-rank ring call (abs-max, 1/4 quantize + pack, 3/4
// quantize + add, dequantize; masked: the one compress with its abs-max first, the
// scatter last; *Feedback: with error feedback's residual).
#include <cstdint>
#include <cstdio>
#include <vector>

#include "kernels/masked_pack.h"
#include "kernels/reduce.h"
#include "kernels/ternary.h"
#include "kernels/ternary_compress.h"

namespace {

using namespace sieve::kernels;

constexpr size_t N = 1 << 18, B = 2048;
std::vector<float> in(N), out(N), scales(N / B + 2);
std::vector<uint32_t> idx;
std::vector<uint64_t> bits((N + 63) / 64);
std::vector<int8_t> work(N + 64), sums(N + 64);
std::vector<uint8_t> wire(N), recv(N);
PhiloxStream rng{7, 1, 3};

// RunKernel_name(): body five times, not inlined (callgrind's unit).
#define K(name, body)                                 \
  __attribute__((noinline)) void RunKernel_##name() { \
    for (int r = 0; r < 5; ++r) {                     \
      body;                                           \
    }                                                 \
  }

// The masked source as the reduce-scatter gathers it (by index, compressed on AVX-512).
TernarySource Masked() {
  TernarySource s = TernarySourceOf(DType::kFloat32, in.data(), idx.data(), B, scales.data(), rng);
  s.bits = bits.data();
  return s;
}
size_t nnz() { return idx.size(); }
K(AbsMax, TernaryAbsMax(DType::kFloat32, in.data(), N, B, scales.data()))
K(QuantizePack,
  TernaryQuantizePack(DType::kFloat32, in.data(), 0, N, B, scales.data(), rng, 2, wire.data()))
K(QuantizeAdd, TernaryQuantizeAdd(DType::kFloat32, in.data(), 0, N, B, scales.data(), rng,
                                  recv.data(), 3, TernaryWork::kInt8, work.data()))
K(Dequantize, TernaryDequantize(DType::kFloat32, TernaryWork::kInt8, sums.data(), N, B,
                                scales.data(), 4, out.data()))
K(AbsMaxMasked, TernaryAbsMax(Masked(), nnz(), scales.data()))
K(QuantizePackMasked, TernaryQuantizePack(Masked(), 0, nnz(), 2, wire.data()))
K(QuantizeAddMasked,
  TernaryQuantizeAdd(Masked(), 0, nnz(), recv.data(), 3, TernaryWork::kInt8, work.data()))
K(DequantizeScatter, TernaryDequantizeScatter(DType::kFloat32, TernaryWork::kInt8, sums.data(), 0,
                                              B, scales.data(), 4, bits.data(), 0, N, out.data()))
std::vector<float> packed(N);
// One rank's share of a 4-rank ring, per call: the encode (abs-max + quantize,
// 1/4 packed into 2 bits and 3/4 added to 3-bit partial sums) and the decode
// (dequantize, or dequantize + scatter under the mask).
K(RankDense, {
  TernaryAbsMax(DType::kFloat32, in.data(), N, B, scales.data());
  TernaryQuantizePack(DType::kFloat32, in.data(), 0, N / 4, B, scales.data(), rng, 2, wire.data());
  TernaryQuantizeAdd(DType::kFloat32, in.data(), N / 4, N - N / 4, B, scales.data(), rng,
                     recv.data(), 3, TernaryWork::kInt8, work.data());
  TernaryDequantize(DType::kFloat32, TernaryWork::kInt8, sums.data(), N, B, scales.data(), 4,
                    out.data());
})
K(RankMasked, {
  const TernarySource s =
      TernarySourceOf(DType::kFloat32, packed.data(), nullptr, B, scales.data(), rng);
  // Gathered once per call, the abs-max taken in the same pass.
  TernaryCompressAbsMax(TernarySourceOf(DType::kFloat32, in.data(), nullptr, B, nullptr),
                        bits.data(), N, packed.data(), scales.data());
  const size_t q = nnz() / 4;
  TernaryQuantizePack(s, 0, q, 2, wire.data());
  TernaryQuantizeAdd(s, q, nnz() - q, recv.data(), 3, TernaryWork::kInt8, work.data());
  TernaryDequantizeScatter(DType::kFloat32, TernaryWork::kInt8, sums.data(), 0, B, scales.data(), 4,
                           bits.data(), 0, N, out.data());
})
K(MaskedCompress, MaskedCompress(4, in.data(), bits.data(), N, packed.data()))
K(CompressAbsMax,
  TernaryCompressAbsMax(TernarySourceOf(DType::kFloat32, in.data(), nullptr, B, nullptr),
                        bits.data(), N, packed.data(), scales.data()))
// Error feedback as the host all-reduce runs it: the residual read by the abs-max,
// read and rewritten by the quantizing pass.
std::vector<float> residual(N);
TernarySource Feedback() {
  TernarySource s = TernarySourceOf(DType::kFloat32, in.data(), nullptr, B, scales.data(), rng);
  s.residual = residual.data();
  return s;
}
K(AbsMaxFeedback, TernaryAbsMax(Feedback(), N, scales.data()))
K(QuantizePackFeedback, TernaryQuantizePack(Feedback(), 0, N, 2, wire.data()))
K(QuantizeAddFeedback,
  TernaryQuantizeAdd(Feedback(), 0, N, recv.data(), 3, TernaryWork::kInt8, work.data()))
K(RankDenseFeedback, {
  TernaryAbsMax(Feedback(), N, scales.data());
  TernaryQuantizePack(Feedback(), 0, N / 4, 2, wire.data());
  TernaryQuantizeAdd(Feedback(), N / 4, N - N / 4, recv.data(), 3, TernaryWork::kInt8,
                     work.data());
  TernaryDequantize(DType::kFloat32, TernaryWork::kInt8, sums.data(), N, B, scales.data(), 4,
                    out.data());
})
// The 16-bit float reduce (2^18 elements of each operand).
std::vector<uint16_t> ha(N), hb(N), hout(N);
K(ReduceFloat16Sum, Reduce(DType::kFloat16, RedOp::kSum, ha.data(), hb.data(), hout.data(), N))
K(ReduceBfloat16Sum, Reduce(DType::kBfloat16, RedOp::kSum, ha.data(), hb.data(), hout.data(), N))
}  // namespace

int main() {
  uint64_t x = 88172645463325252ull;
  for (size_t j = 0; j < N; ++j) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    in[j] = static_cast<float>(static_cast<int64_t>(x % 2001) - 1000) / 997.0f;
    if (x % 100 < 50) {
      idx.push_back(j);
      bits[j / 64] |= uint64_t{1} << (j % 64);
    }
  }
  for (auto& s : scales) s = 1.01f;
  for (size_t k = 0; k < N; ++k) {
    sums[k] = static_cast<int8_t>(k % 9) - 4;
    recv[k] = static_cast<uint8_t>(k * 37);
  }
  RunKernel_AbsMax();
  RunKernel_QuantizePack();
  RunKernel_QuantizeAdd();
  RunKernel_Dequantize();
  RunKernel_AbsMaxMasked();
  RunKernel_QuantizePackMasked();
  RunKernel_QuantizeAddMasked();
  RunKernel_DequantizeScatter();
  RunKernel_RankDense();
  RunKernel_RankMasked();
  RunKernel_MaskedCompress();
  RunKernel_CompressAbsMax();
  for (size_t k = 0; k < N; ++k) residual[k] = in[(k * 7) % N] / 64.0f;
  RunKernel_AbsMaxFeedback();
  RunKernel_QuantizePackFeedback();
  RunKernel_QuantizeAddFeedback();
  RunKernel_RankDenseFeedback();
  for (size_t k = 0; k < N; ++k) {
    ha[k] = FloatToHalf(in[k]);
    hb[k] = FloatToHalf(in[(k * 7) % N]);
  }
  RunKernel_ReduceFloat16Sum();
  for (size_t k = 0; k < N; ++k) {
    ha[k] = FloatToBf16(in[k]);
    hb[k] = FloatToBf16(in[(k * 7) % N]);
  }
  RunKernel_ReduceBfloat16Sum();
  std::printf("nnz %zu %d\n", nnz(), static_cast<int>(wire[5] + work[9] + out[77]));
}
