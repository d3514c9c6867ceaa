// Fast Reduce/DivideBy: one (dtype, op) dispatch per call into plain templated loops
// that GCC auto-vectorizes, built twice (baseline x86-64 and AVX2) and picked at run time;
// float16/bfloat16 reduce in registers on AVX2/AVX-512 (reduce_half.cc), else widened to
// float32 in stack chunks; float16 division with F16C on AVX2.
// No float16/bfloat16 arithmetic instructions (AVX-512 FP16/BF16): they round each
// operation to 16 bits, where DESIGN computes in float32 and rounds once.
#include "kernels/reduce.h"

#include <algorithm>
#include <cstdint>
#include <type_traits>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "kernels/combine_loops.h"
#include "kernels/cpu_isa.h"
#include "kernels/half_codec.h"
#include "kernels/reduce_half.h"

namespace sieve::kernels {
namespace {

// Integer arithmetic happens in an unsigned type at least as wide as `unsigned` so that
// overflow wraps (defined) instead of being signed-overflow UB or promoting to int.
template <typename T>
using WrapType =
    std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned, std::make_unsigned_t<T>>;

// Everything below the ISA entry points is forced inline (SIEVE_KERNEL_INLINE) so that it is
// compiled (and vectorized) with the instruction set of whichever entry point it lands in.

template <typename T>
struct SumOp {
  SIEVE_KERNEL_INLINE T operator()(T a, T b) const {
    if constexpr (std::is_integral_v<T>) {
      return static_cast<T>(static_cast<WrapType<T>>(a) + static_cast<WrapType<T>>(b));
    } else {
      return a + b;
    }
  }
};

template <typename T>
struct ProdOp {
  SIEVE_KERNEL_INLINE T operator()(T a, T b) const {
    if constexpr (std::is_integral_v<T>) {
      return static_cast<T>(static_cast<WrapType<T>>(a) * static_cast<WrapType<T>>(b));
    } else {
      return a * b;
    }
  }
};

// The select form maps onto maxps/minps (and pmax*) and fixes which operand wins on
// ties and NaN, so the reference can reproduce it bit for bit.
template <typename T>
struct MaxOp {
  SIEVE_KERNEL_INLINE T operator()(T a, T b) const { return a > b ? a : b; }
};

template <typename T>
struct MinOp {
  SIEVE_KERNEL_INLINE T operator()(T a, T b) const { return a < b ? a : b; }
};

// Elements stored natively: one loop (combine::Native).
template <typename T>
struct PlainKernel {
  template <template <typename> class Op>
  SIEVE_KERNEL_INLINE static void Run(const void* a, const void* b, void* out, size_t n) {
    combine::Native<T>(a, b, out, n, Op<T>());
  }
};

// 16-bit floats: combined in float32, rounded once (combine::Widened).
template <typename Codec>
struct PackedKernel {
  template <template <typename> class Op>
  SIEVE_KERNEL_INLINE static void Run(const void* a, const void* b, void* out, size_t n) {
    combine::Widened<Codec>(a, b, out, n, Op<float>());
  }
};

template <typename Kernel>
SIEVE_KERNEL_INLINE void DispatchOp(RedOp op, const void* a, const void* b, void* out, size_t n) {
  switch (op) {
    case RedOp::kSum:
    case RedOp::kAvg:  // averaging divides afterwards (DivideBy)
      Kernel::template Run<SumOp>(a, b, out, n);
      return;
    case RedOp::kProd:
      Kernel::template Run<ProdOp>(a, b, out, n);
      return;
    case RedOp::kMax:
      Kernel::template Run<MaxOp>(a, b, out, n);
      return;
    case RedOp::kMin:
      Kernel::template Run<MinOp>(a, b, out, n);
      return;
  }
}

// Truncating integer division in the common type, so a divisor wider than T (300 for
// int8) is not narrowed first; a divisor below 1 is rejected by the caller.
template <typename T>
SIEVE_KERNEL_INLINE void DivideInts(void* buf, size_t n, int divisor) {
  using D = std::common_type_t<T, int>;
  T* t = static_cast<T*>(buf);
  const D d = static_cast<D>(divisor);
  for (size_t i = 0; i < n; ++i) t[i] = static_cast<T>(t[i] / d);
}

template <typename T>
SIEVE_KERNEL_INLINE void DivideFloats(void* buf, size_t n, int divisor) {
  T* t = static_cast<T*>(buf);
  const T d = static_cast<T>(divisor);
  for (size_t i = 0; i < n; ++i) t[i] = t[i] / d;
}

template <typename Codec>
SIEVE_KERNEL_INLINE void DividePacked(void* buf, size_t n, int divisor) {
  uint16_t* t = static_cast<uint16_t*>(buf);
  const float d = static_cast<float>(divisor);
  for (size_t i = 0; i < n; ++i) t[i] = Codec::Store(Codec::Load(t[i]) / d);
}

SIEVE_KERNEL_INLINE void ReduceImpl(DType dtype, RedOp op, const void* a, const void* b, void* out,
                                    size_t n) {
  switch (dtype) {
    case DType::kInt8:
      return DispatchOp<PlainKernel<int8_t>>(op, a, b, out, n);
    case DType::kUint8:
      return DispatchOp<PlainKernel<uint8_t>>(op, a, b, out, n);
    case DType::kInt32:
      return DispatchOp<PlainKernel<int32_t>>(op, a, b, out, n);
    case DType::kUint32:
      return DispatchOp<PlainKernel<uint32_t>>(op, a, b, out, n);
    case DType::kInt64:
      return DispatchOp<PlainKernel<int64_t>>(op, a, b, out, n);
    case DType::kUint64:
      return DispatchOp<PlainKernel<uint64_t>>(op, a, b, out, n);
    case DType::kFloat16:
      return DispatchOp<PackedKernel<HalfCodec>>(op, a, b, out, n);
    case DType::kFloat32:
      return DispatchOp<PlainKernel<float>>(op, a, b, out, n);
    case DType::kFloat64:
      return DispatchOp<PlainKernel<double>>(op, a, b, out, n);
    case DType::kBfloat16:
      return DispatchOp<PackedKernel<Bf16Codec>>(op, a, b, out, n);
  }
}

SIEVE_KERNEL_INLINE void DivideByImpl(DType dtype, void* buf, size_t n, int divisor) {
  if (divisor < 1) return;  // averages divide by a rank count; nothing else is meaningful
  switch (dtype) {
    case DType::kInt8:
      return DivideInts<int8_t>(buf, n, divisor);
    case DType::kUint8:
      return DivideInts<uint8_t>(buf, n, divisor);
    case DType::kInt32:
      return DivideInts<int32_t>(buf, n, divisor);
    case DType::kUint32:
      return DivideInts<uint32_t>(buf, n, divisor);
    case DType::kInt64:
      return DivideInts<int64_t>(buf, n, divisor);
    case DType::kUint64:
      return DivideInts<uint64_t>(buf, n, divisor);
    case DType::kFloat16:
      return DividePacked<HalfCodec>(buf, n, divisor);
    case DType::kFloat32:
      return DivideFloats<float>(buf, n, divisor);
    case DType::kFloat64:
      return DivideFloats<double>(buf, n, divisor);
    case DType::kBfloat16:
      return DividePacked<Bf16Codec>(buf, n, divisor);
  }
}

// SSE2-only x86-64 cannot profitably vectorize 64-bit integer max/min/prod; AVX2 can,
// and widens every other loop too.
void ReduceBaseline(DType dtype, RedOp op, const void* a, const void* b, void* out, size_t n) {
  ReduceImpl(dtype, op, a, b, out, n);
}
void DivideByBaseline(DType dtype, void* buf, size_t n, int divisor) {
  DivideByImpl(dtype, buf, n, divisor);
}
#if defined(__x86_64__)
__attribute__((target("avx2"))) void ReduceAvx2(DType dtype, RedOp op, const void* a, const void* b,
                                                void* out, size_t n) {
  ReduceImpl(dtype, op, a, b, out, n);
}
__attribute__((target("avx2"))) void DivideByAvx2(DType dtype, void* buf, size_t n, int divisor) {
  DivideByImpl(dtype, buf, n, divisor);
}

bool HasAvx2() { return ActiveCpuIsa() >= CpuIsa::kAvx2; }

// float16 with F16C conversions (the AVX2 level includes F16C): vcvtph2ps is exact
// and vcvtps2ph rounds to nearest even like FloatToHalf; only a NaN's payload
// differs, so eight values holding a NaN are stored through FloatToHalf.
#define SIEVE_F16C __attribute__((target("avx2,f16c")))

SIEVE_F16C void HalvesToFloats(const uint16_t* in, float* out, size_t m) {
  size_t i = 0;
  for (; i + 8 <= m; i += 8)
    _mm256_storeu_ps(out + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i))));
  for (; i < m; ++i) out[i] = HalfToFloat(in[i]);
}

SIEVE_F16C void FloatsToHalves(const float* in, uint16_t* out, size_t m) {
  size_t i = 0;
  for (; i + 8 <= m; i += 8) {
    const __m256 v = _mm256_loadu_ps(in + i);
    if (_mm256_movemask_ps(_mm256_cmp_ps(v, v, _CMP_UNORD_Q)) != 0) {
      for (size_t k = i; k < i + 8; ++k) out[k] = FloatToHalf(in[k]);
    } else {
      _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i),
                       _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
    }
  }
  for (; i < m; ++i) out[i] = FloatToHalf(in[i]);
}

SIEVE_F16C void DivideHalfF16c(void* buf, size_t n, int divisor) {
  if (divisor < 1) return;
  constexpr size_t kChunk = 512;
  float f[kChunk];
  uint16_t* t = static_cast<uint16_t*>(buf);
  const float d = static_cast<float>(divisor);
  for (size_t base = 0; base < n; base += kChunk) {
    const size_t m = std::min(kChunk, n - base);
    HalvesToFloats(t + base, f, m);
    for (size_t i = 0; i < m; ++i) f[i] = f[i] / d;
    FloatsToHalves(f, t + base, m);
  }
}
#endif

}  // namespace

void Reduce(DType dtype, RedOp op, const void* a, const void* b, void* out, size_t n) {
#if defined(__x86_64__)
  if (dtype == DType::kFloat16 || dtype == DType::kBfloat16) {
    if (ActiveCpuIsa() >= CpuIsa::kAvx512) return simd::ReduceHalfAvx512(dtype, op, a, b, out, n);
    if (HasAvx2()) return simd::ReduceHalfAvx2(dtype, op, a, b, out, n);
  }
  if (HasAvx2()) return ReduceAvx2(dtype, op, a, b, out, n);
#endif
  ReduceBaseline(dtype, op, a, b, out, n);
}

void DivideBy(DType dtype, void* buf, size_t n, int divisor) {
#if defined(__x86_64__)
  if (HasAvx2() && dtype == DType::kFloat16) return DivideHalfF16c(buf, n, divisor);
  if (HasAvx2()) return DivideByAvx2(dtype, buf, n, divisor);
#endif
  DivideByBaseline(dtype, buf, n, divisor);
}

}  // namespace sieve::kernels
