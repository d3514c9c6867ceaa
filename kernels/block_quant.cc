// Scalar block quantizer (block_quant.h). One pass per block for the scale,
// one for the codes; no SIMD path yet.
#include "kernels/block_quant.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

namespace sieve::kernels {

namespace {

float Load(DType dtype, const void* in, size_t j) {
  switch (dtype) {
    case DType::kFloat16:
      return HalfToFloat(static_cast<const uint16_t*>(in)[j]);
    case DType::kBfloat16:
      return Bf16ToFloat(static_cast<const uint16_t*>(in)[j]);
    default:
      return static_cast<const float*>(in)[j];
  }
}

void Store(DType dtype, void* out, size_t j, float v) {
  switch (dtype) {
    case DType::kFloat16:
      static_cast<uint16_t*>(out)[j] = FloatToHalf(v);
      break;
    case DType::kBfloat16:
      static_cast<uint16_t*>(out)[j] = FloatToBf16(v);
      break;
    default:
      static_cast<float*>(out)[j] = v;
  }
}

size_t Blocks(size_t count) { return (count + kBlockQuantBlock - 1) / kBlockQuantBlock; }

}  // namespace

size_t BlockQuantBytes(size_t count, int bits) {
  return Blocks(count) * sizeof(float) + (count * static_cast<size_t>(bits) + 7) / 8;
}

void BlockQuantEncode(DType dtype, const void* in, size_t count, int bits, void* out) {
  if (count == 0) return;  // `out` may be NULL then (memset's argument must not be)
  unsigned char* scales = static_cast<unsigned char*>(out);
  unsigned char* codes = scales + Blocks(count) * sizeof(float);
  std::memset(codes, 0, (count * static_cast<size_t>(bits) + 7) / 8);
  for (size_t b = 0; b * kBlockQuantBlock < count; ++b) {
    const size_t first = b * kBlockQuantBlock, last = std::min(count, first + kBlockQuantBlock);
    uint32_t m = 0;
    for (size_t j = first; j < last; ++j) {
      const float x = Load(dtype, in, j);
      uint32_t a;
      std::memcpy(&a, &x, 4);
      m = std::max(m, a & 0x7fffffffu);
    }
    const float s = BlockQuantScaleOfBits(m, bits);
    std::memcpy(scales + b * sizeof(float), &s, sizeof(float));
    if (!(s > 0.0f)) continue;  // zeros, or a NaN scale: the codes stay 0
    for (size_t j = first; j < last; ++j) {
      const int code = BlockQuantCode(Load(dtype, in, j), s, bits);
      if (bits == 8)
        codes[j] = static_cast<unsigned char>(static_cast<int8_t>(code));
      else
        codes[j / 2] |= static_cast<unsigned char>((code & 0xf) << (4 * (j % 2)));
    }
  }
}

void BlockQuantDecode(DType dtype, const void* in, size_t count, int bits, void* out) {
  const unsigned char* scales = static_cast<const unsigned char*>(in);
  const unsigned char* codes = scales + Blocks(count) * sizeof(float);
  for (size_t b = 0; b * kBlockQuantBlock < count; ++b) {
    float s;
    std::memcpy(&s, scales + b * sizeof(float), sizeof(float));
    const size_t first = b * kBlockQuantBlock, last = std::min(count, first + kBlockQuantBlock);
    for (size_t j = first; j < last; ++j)
      Store(dtype, out, j, BlockQuantValue(BlockQuantCodeAt(codes, j, bits), s));
  }
}

}  // namespace sieve::kernels
