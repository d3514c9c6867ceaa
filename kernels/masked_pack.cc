// Masked pack/unpack kernels: one templated loop per element width, which GCC
// unrolls (and vectorizes where the target has gathers). Unpack walks the
// bitmap a word at a time: full words copy, empty words zero, mixed words
// zero then scatter their set bits, so every output byte is written once.
#include "kernels/masked_pack.h"

#include <algorithm>
#include <cstring>

#include "kernels/reduce.h"

namespace sieve::kernels {
namespace {

template <typename T>
void PackT(const void* in, const uint32_t* idx, size_t nnz, void* out) {
  const T* src = static_cast<const T*>(in);
  T* dst = static_cast<T*>(out);
  for (size_t k = 0; k < nnz; ++k) dst[k] = src[idx[k]];
}

template <typename T>
void UnpackT(const void* packed, const uint64_t* bits, size_t count, void* out) {
  const T* src = static_cast<const T*>(packed);
  T* dst = static_cast<T*>(out);
  size_t p = 0;
  for (size_t base = 0; base < count; base += 64) {
    const size_t m = std::min<size_t>(64, count - base);
    const uint64_t full = m == 64 ? ~uint64_t{0} : (uint64_t{1} << m) - 1;
    uint64_t word = bits[base / 64];
    T* o = dst + base;
    if (word == full) {
      std::memcpy(o, src + p, m * sizeof(T));
      p += m;
      continue;
    }
    for (size_t i = 0; i < m; ++i) o[i] = T{0};
    for (; word != 0; word &= word - 1) o[__builtin_ctzll(word)] = src[p++];
  }
}

// Elements gathered per stack chunk before the reduction kernel combines them.
constexpr size_t kChunkBytes = 8192;

}  // namespace

void MaskedPack(size_t elem_size, const void* in, const uint32_t* idx, size_t nnz, void* out) {
  switch (elem_size) {
    case 1: return PackT<uint8_t>(in, idx, nnz, out);
    case 2: return PackT<uint16_t>(in, idx, nnz, out);
    case 4: return PackT<uint32_t>(in, idx, nnz, out);
    default: return PackT<uint64_t>(in, idx, nnz, out);
  }
}

void MaskedGatherReduce(DType dtype, RedOp op, const void* in, const uint32_t* idx,
                        const void* wire, void* out, size_t nnz) {
  alignas(64) unsigned char gathered[kChunkBytes];
  const size_t es = DTypeSize(dtype);
  const size_t chunk = kChunkBytes / es;
  const char* w = static_cast<const char*>(wire);
  char* o = static_cast<char*>(out);
  for (size_t k = 0; k < nnz; k += chunk) {
    const size_t m = std::min(chunk, nnz - k);
    MaskedPack(es, in, idx + k, m, gathered);  // stays in L1 for the combine below
    Reduce(dtype, op, gathered, w + k * es, o + k * es, m);
  }
}

void MaskedUnpack(size_t elem_size, const void* packed, const uint64_t* bits, size_t count,
                  void* out) {
  switch (elem_size) {
    case 1: return UnpackT<uint8_t>(packed, bits, count, out);
    case 2: return UnpackT<uint16_t>(packed, bits, count, out);
    case 4: return UnpackT<uint32_t>(packed, bits, count, out);
    default: return UnpackT<uint64_t>(packed, bits, count, out);
  }
}

}  // namespace sieve::kernels
