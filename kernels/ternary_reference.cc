// Scalar references for the ternary kernels: one Philox evaluation per
// element and bit-by-bit packing, written from the definitions in ternary.h.
#include <cmath>

#include "kernels/ternary.h"

namespace sieve::kernels {

namespace {

float LoadAsFloat(DType dtype, const void* in, size_t j) {
  if (dtype == DType::kFloat16) return HalfToFloat(static_cast<const uint16_t*>(in)[j]);
  if (dtype == DType::kBfloat16) return Bf16ToFloat(static_cast<const uint16_t*>(in)[j]);
  return static_cast<const float*>(in)[j];
}

}  // namespace

void TernaryQuantizeReference(DType dtype, const void* in, const uint32_t* idx, size_t offset,
                              size_t elems, size_t block, const float* scales,
                              const PhiloxStream& rng, int8_t* q) {
  for (size_t i = 0; i < elems; ++i) {
    size_t j = offset + i;
    float g = LoadAsFloat(dtype, in, idx != nullptr ? idx[j] : j);
    float s = scales[j / block];
    uint32_t word = PhiloxQuad(rng, j / 4).v[j % 4];
    float u = static_cast<float>(word >> 8) / 16777216.0f;
    int8_t v = 0;
    if (s > 0.0f && u < std::fabs(g) / s) v = g < 0.0f ? -1 : 1;
    q[i] = v;
  }
}

void TernaryPackReference(const int32_t* v, size_t elems, int w, void* wire) {
  uint8_t* out = static_cast<uint8_t*>(wire);
  size_t bytes = TernaryPackedBytes(elems, w);
  for (size_t b = 0; b < bytes; ++b) out[b] = 0;
  for (size_t i = 0; i < elems; ++i) {
    uint32_t bits = static_cast<uint32_t>(v[i]);  // two's complement
    for (int k = 0; k < w; ++k) {
      size_t pos = i * static_cast<size_t>(w) + static_cast<size_t>(k);
      if ((bits >> k) & 1u) out[pos / 8] = static_cast<uint8_t>(out[pos / 8] | (1u << (pos % 8)));
    }
  }
}

void TernaryUnpackReference(const void* wire, size_t elems, int w, int32_t* v) {
  const uint8_t* in = static_cast<const uint8_t*>(wire);
  for (size_t i = 0; i < elems; ++i) {
    int64_t value = 0;
    for (int k = 0; k < w; ++k) {
      size_t pos = i * static_cast<size_t>(w) + static_cast<size_t>(k);
      if ((in[pos / 8] >> (pos % 8)) & 1u) value |= int64_t{1} << k;
    }
    if (value >= (int64_t{1} << (w - 1))) value -= int64_t{1} << w;  // sign bit set
    v[i] = static_cast<int32_t>(value);
  }
}

void TernaryDequantizeScatterReference(DType dtype, const int32_t* sums, size_t offset,
                                       size_t block, const float* scales, int divisor,
                                       const uint64_t* bits, size_t begin, size_t end,
                                       void* out) {
  size_t k = 0;  // kept elements seen so far in [begin, end)
  for (size_t j = begin; j < end; ++j) {
    float v = 0.0f;
    if ((bits[j / 64] >> (j % 64)) & 1) {
      v = scales[(offset + k) / block] * static_cast<float>(sums[k]);
      if (divisor != 1) v = v / static_cast<float>(divisor);
      ++k;
    }
    if (dtype == DType::kFloat16) {
      static_cast<uint16_t*>(out)[j] = FloatToHalf(v);
    } else if (dtype == DType::kBfloat16) {
      static_cast<uint16_t*>(out)[j] = FloatToBf16(v);
    } else {
      static_cast<float*>(out)[j] = v;
    }
  }
}

}  // namespace sieve::kernels
