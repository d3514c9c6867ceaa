// Masked pack/unpack kernels: one templated loop per element width, which GCC
// unrolls (4-byte elements by index: AVX-512 or AVX2 windows and gathers,
// masked_pack_avx512.cc and masked_pack_avx2.cc). Unpack walks the
// bitmap a word at a time (AVX-512 expand where the CPU has it, see
// masked_pack_avx512.cc), writing every output byte once.
#include "kernels/masked_pack.h"

#include <algorithm>
#include <cstring>

#include "kernels/bits_type.h"
#include "kernels/cpu_isa.h"
#include "kernels/masked_pack_simd.h"
#include "kernels/reduce.h"

namespace sieve::kernels {
namespace {

template <typename T>
void PackT(const void* in, const uint32_t* idx, size_t nnz, void* out) {
  const T* src = static_cast<const T*>(in);
  T* dst = static_cast<T*>(out);
  size_t k = 0;
  if (sizeof(T) == 4 && ActiveCpuIsa() >= CpuIsa::kAvx512)
    k = simd::MaskedGather4Avx512(in, idx, nnz, out);
  else if (sizeof(T) == 4 && ActiveCpuIsa() == CpuIsa::kAvx2)
    k = simd::MaskedGather4Avx2(in, idx, nnz, out);
  for (; k < nnz; ++k) dst[k] = src[idx[k]];
}

// Dense positions [j, j + m) of one bitmap word (word already shifted so bit 0
// is position j, and cut to m bits): full words copy, empty words zero, mixed
// words zero then scatter their set bits. Returns the packed elements consumed.
template <typename T>
size_t UnpackWord(const T* src, uint64_t word, size_t m, T* o) {
  if (m == 64 && word == ~uint64_t{0}) {
    std::memcpy(o, src, 64 * sizeof(T));
    return 64;
  }
  for (size_t i = 0; i < m; ++i) o[i] = T{0};
  size_t p = 0;
  for (; word != 0; word &= word - 1) o[__builtin_ctzll(word)] = src[p++];
  return p;
}

template <typename T>
void UnpackRangeT(const T* src, const uint64_t* bits, size_t begin, size_t end, T* dst) {
  const bool wide = ActiveCpuIsa() >= CpuIsa::kAvx512;
  size_t j = begin, p = 0;
  while (j < end) {
    const size_t base = j & ~size_t{63};
    if (j == base && end - j >= 64 && wide) {  // whole words, vectorized
      const size_t words = (end - j) / 64;
      p += simd::MaskedUnpackWordsAvx512(sizeof(T), src + p, bits + j / 64, words, dst + j);
      j += words * 64;
      continue;
    }
    const size_t stop = std::min(end, base + 64), m = stop - j;
    uint64_t word = bits[base / 64] >> (j - base);
    if (m < 64) word &= (uint64_t{1} << m) - 1;
    p += UnpackWord(src + p, word, m, dst + j);
    j = stop;
  }
}

template <typename T>
size_t CompressT(const T* src, const uint64_t* bits, size_t count, T* dst) {
  size_t j = 0, p = 0;
  if (ActiveCpuIsa() >= CpuIsa::kAvx512) {
    p = simd::MaskedCompressWordsAvx512(sizeof(T), src, bits, count / 64, dst);
    j = count / 64 * 64;
  } else if (ActiveCpuIsa() == CpuIsa::kAvx2 && sizeof(T) == 4) {
    p = simd::MaskedCompressWords4Avx2(src, bits, count / 64, dst);
    j = count / 64 * 64;
  }
  for (; j < count; j += 64) {
    uint64_t word = bits[j / 64];
    if (word == ~uint64_t{0} && count - j >= 64) {
      std::memcpy(dst + p, src + j, 64 * sizeof(T));
      p += 64;
      continue;
    }
    for (; word != 0; word &= word - 1) dst[p++] = src[j + __builtin_ctzll(word)];
  }
  return p;
}

// Elements gathered per stack chunk before the reduction kernel combines them.
constexpr size_t kChunkBytes = 8192;

}  // namespace

void MaskedPack(size_t elem_size, const void* in, const uint32_t* idx, size_t nnz, void* out) {
  WithBitsType(elem_size, [&](auto zero) { PackT<decltype(zero)>(in, idx, nnz, out); });
}

size_t MaskedCompress(size_t elem_size, const void* in, const uint64_t* bits, size_t count,
                      void* out) {
  size_t n = 0;
  WithBitsType(elem_size, [&](auto zero) {
    using U = decltype(zero);
    n = CompressT(static_cast<const U*>(in), bits, count, static_cast<U*>(out));
  });
  return n;
}

void MaskedGatherReduce(DType dtype, RedOp op, const void* in, const uint32_t* idx,
                        const void* wire, void* out, size_t nnz) {
  alignas(64) unsigned char gathered[kChunkBytes];
  const size_t es = DTypeSize(dtype);
  const size_t chunk = kChunkBytes / es;
  const char* w = static_cast<const char*>(wire);
  char* o = static_cast<char*>(out);
  size_t k = 0;
  if (dtype == DType::kFloat32 && (op == RedOp::kSum || op == RedOp::kAvg)) {
    // gathered and added in one pass
    if (ActiveCpuIsa() >= CpuIsa::kAvx512)
      k = simd::MaskedGatherSum4Avx512(in, idx, wire, nnz, out);
    else if (ActiveCpuIsa() == CpuIsa::kAvx2)
      k = simd::MaskedGatherSum4Avx2(in, idx, wire, nnz, out);
  }
  for (; k < nnz; k += chunk) {
    const size_t m = std::min(chunk, nnz - k);
    MaskedPack(es, in, idx + k, m, gathered);  // stays in L1 for the combine below
    Reduce(dtype, op, gathered, w + k * es, o + k * es, m);
  }
}

void MaskedUnpackRange(size_t elem_size, const void* packed, const uint64_t* bits, size_t begin,
                       size_t end, void* out) {
  WithBitsType(elem_size, [&](auto zero) {
    using U = decltype(zero);
    UnpackRangeT(static_cast<const U*>(packed), bits, begin, end, static_cast<U*>(out));
  });
}

void MaskedUnpack(size_t elem_size, const void* packed, const uint64_t* bits, size_t count,
                  void* out) {
  MaskedUnpackRange(elem_size, packed, bits, 0, count, out);
}

}  // namespace sieve::kernels
