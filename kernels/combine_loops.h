// The two loop shapes of the CPU kernels that combine two inputs element by element
// (reduce.cc: Reduce; coverage_average.cc: SumDivide), and the unaligned element load
// they and reduce_half.cc share. Internal to those files: plain loops GCC auto-vectorizes,
// forced inline so each compiles with the instruction set of the ISA entry point
// (baseline x86-64 or AVX2) it lands in.
#ifndef SIEVE_KERNELS_COMBINE_LOOPS_H_
#define SIEVE_KERNELS_COMBINE_LOOPS_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

#define SIEVE_KERNEL_INLINE inline __attribute__((always_inline))

namespace sieve::kernels::combine {

// Element i of an array of T at any address (a transport's receive buffer puts a
// message at whatever offset its header leaves): a byte copy, which compiles to the
// same unaligned load a typed read would, without the typed read's alignment UB.
template <typename T>
SIEVE_KERNEL_INLINE T LoadAt(const void* p, size_t i) {
  T v;
  std::memcpy(&v, static_cast<const unsigned char*>(p) + i * sizeof(T), sizeof(T));
  return v;
}

// out[i] = combine(a[i], b[i]) for elements stored natively; b at any address. No
// __restrict: out may be a or b (exact alias), which GCC's runtime alias check lets
// through to the vector path.
template <typename T, typename Combine>
SIEVE_KERNEL_INLINE void Native(const void* a, const void* b, void* out, size_t n,
                                Combine combine) {
  const T* ta = static_cast<const T*>(a);
  T* to = static_cast<T*>(out);
  for (size_t i = 0; i < n; ++i) to[i] = combine(ta[i], LoadAt<T>(b, i));
}

// 16-bit floats (Codec: HalfCodec, Bf16Codec): widen a chunk of a and b to float32, combine
// with the vectorized float loop, round once on the way out; b at any address. The whole chunk
// is read before any of it is written, so out aliasing a or b is harmless.
template <typename Codec, typename Combine>
SIEVE_KERNEL_INLINE void Widened(const void* a, const void* b, void* out, size_t n,
                                 Combine combine) {
  constexpr size_t kChunk = 512;
  float fa[kChunk];
  float fb[kChunk];
  const uint16_t* ta = static_cast<const uint16_t*>(a);
  uint16_t* to = static_cast<uint16_t*>(out);
  for (size_t base = 0; base < n; base += kChunk) {
    const size_t m = std::min(kChunk, n - base);
    for (size_t i = 0; i < m; ++i) fa[i] = Codec::Load(ta[base + i]);
    for (size_t i = 0; i < m; ++i) fb[i] = Codec::Load(LoadAt<uint16_t>(b, base + i));
    for (size_t i = 0; i < m; ++i) fa[i] = combine(fa[i], fb[i]);
    for (size_t i = 0; i < m; ++i) to[base + i] = Codec::Store(fa[i]);
  }
}

}  // namespace sieve::kernels::combine

#endif  // SIEVE_KERNELS_COMBINE_LOOPS_H_
