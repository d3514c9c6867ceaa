// Scalar references for the ternary kernels: two Philox evaluations per
// element compared as one 32-bit number, and bit-by-bit packing, written from
// the definitions in ternary.h and philox.h.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "kernels/ternary.h"

namespace sieve::kernels {

namespace {

float LoadAsFloat(DType dtype, const void* in, size_t j) {
  if (dtype == DType::kFloat16) return HalfToFloat(static_cast<const uint16_t*>(in)[j]);
  if (dtype == DType::kBfloat16) return Bf16ToFloat(static_cast<const uint16_t*>(in)[j]);
  return static_cast<const float*>(in)[j];
}


// Element j of src as sent (g + e_prev rounded to the datatype with feedback);
// *sum gets g + e_prev in float32.
float SentValue(const TernarySource& src, size_t j, float* sum) {
  const float g = LoadAsFloat(src.dtype, src.data, src.idx != nullptr ? src.idx[j] : j);
  if (src.residual == nullptr) return *sum = g;
  *sum = g + src.residual[j];
  if (src.dtype == DType::kFloat16) return HalfToFloat(FloatToHalf(*sum));
  if (src.dtype == DType::kBfloat16) return Bf16ToFloat(FloatToBf16(*sum));
  return *sum;
}

}  // namespace

void TernaryAbsMaxReference(const TernarySource& src, size_t count, float* scales) {
  for (size_t b = 0; b * src.block < count; ++b) {
    float m = 0.0f;
    bool finite = true;
    for (size_t j = b * src.block; j < count && j < (b + 1) * src.block; ++j) {
      const float g = LoadAsFloat(src.dtype, src.data, src.idx != nullptr ? src.idx[j] : j);
      finite =
          finite && std::isfinite(g) && (src.residual == nullptr || !std::isnan(src.residual[j]));
      m = std::max(m, std::fabs(g));
    }
    scales[b] = finite ? m : std::numeric_limits<float>::quiet_NaN();
  }
}

void TernaryQuantizeReference(const TernarySource& src, size_t offset, size_t elems, int8_t* q,
                              float* residual_out) {
  for (size_t i = 0; i < elems; ++i) {
    const size_t j = offset + i;
    float sum;
    const float g = SentValue(src, j, &sum);
    const float s = src.scales[j / src.block];
    const uint64_t hi = PhiloxHalf(PhiloxOct(src.rng, j / 8), j);
    const uint64_t lo = PhiloxHalf(PhiloxOct(src.rng, j / 8, /*refine=*/true), j);
    const double u = static_cast<double>((hi << 16) | lo);  // uniform in [0, 2^32)
    int8_t v = 0;
    if (src.levels == 1) {
      if (s > 0.0f && u < static_cast<double>(std::fabs(g) / s) * 4294967296.0)  // exact
        v = g < 0.0f ? -1 : 1;
    } else if (s > 0.0f && !std::isnan(g)) {
      // y = L|g|/s in float32 as specified; floor(y) + [U < frac(y) * 2^32] in double (exact).
      const float y = std::fabs(g) / s * static_cast<float>(src.levels);
      double m = src.levels;
      if (y < static_cast<float>(src.levels)) {
        const double fl = std::floor(static_cast<double>(y));
        m = fl + (u < (static_cast<double>(y) - fl) * 4294967296.0 ? 1 : 0);
      }
      v = static_cast<int8_t>(g < 0.0f ? -m : m);
    }
    q[i] = v;
    if (residual_out != nullptr)
      residual_out[i] = sum - s * static_cast<float>(v) / static_cast<float>(src.levels);
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

void TernaryGatherDecodeReference(DType dtype, const void* const* wires, int n, int w,
                                  size_t offset, size_t elems, size_t block, const float* scales,
                                  int divisor, void* out) {
  std::vector<int32_t> sums(elems, 0), v(elems);
  for (int r = 0; r < n; ++r) {
    TernaryUnpackReference(wires[r], elems, w, v.data());
    for (size_t i = 0; i < elems; ++i) sums[i] += v[i];
  }
  std::vector<uint64_t> all((elems + 63) / 64, ~uint64_t{0});
  TernaryDequantizeScatterReference(dtype, sums.data(), offset, block, scales, divisor, all.data(),
                                    0, elems, out);
}

}  // namespace sieve::kernels
