// Selection by magnitude with a total order (so every rank and the reference
// pick the same elements), packing, and the rank-ordered sum.
#include "topk/topk_codec.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

namespace sieve::topk {

namespace {

using kernels::DType;

float Load(const void* p, DType dtype, size_t i) {
  if (dtype == DType::kFloat32) return static_cast<const float*>(p)[i];
  const uint16_t h = static_cast<const uint16_t*>(p)[i];
  return dtype == DType::kFloat16 ? kernels::HalfToFloat(h) : kernels::Bf16ToFloat(h);
}

// Rounds to dtype; writes its bytes to `out`; returns the rounded value as float.
float Store(float v, DType dtype, void* out) {
  if (dtype == DType::kFloat32) {
    std::memcpy(out, &v, 4);
    return v;
  }
  const uint16_t h = dtype == DType::kFloat16 ? kernels::FloatToHalf(v) : kernels::FloatToBf16(v);
  std::memcpy(out, &h, 2);
  return dtype == DType::kFloat16 ? kernels::HalfToFloat(h) : kernels::Bf16ToFloat(h);
}

// |v| with NaN above every number.
float Magnitude(float v) { return std::isnan(v) ? INFINITY : std::fabs(v); }

}  // namespace

size_t KeptElements(size_t count, double fraction) {
  if (count == 0) return 0;
  const double k = std::ceil(fraction * static_cast<double>(count));
  if (k < 1) return 1;
  return k >= static_cast<double>(count) ? count : static_cast<size_t>(k);
}

size_t PairBytes(DType dtype) { return 4 + kernels::DTypeSize(dtype); }

void SelectAndPack(const void* send, size_t count, DType dtype, size_t k, float* residual,
                   uint8_t* pairs) {
  if (k == 0) return;
  std::vector<float> g(count);
  for (size_t i = 0; i < count; ++i) g[i] = Load(send, dtype, i) + (residual ? residual[i] : 0.0f);
  std::vector<uint32_t> order(count);
  for (size_t i = 0; i < count; ++i) order[i] = static_cast<uint32_t>(i);
  // Larger magnitude first; equal magnitudes by lower index: a total order.
  auto before = [&g](uint32_t a, uint32_t b) {
    const float ma = Magnitude(g[a]), mb = Magnitude(g[b]);
    return ma != mb ? ma > mb : a < b;
  };
  if (k < count) std::nth_element(order.begin(), order.begin() + (k - 1), order.end(), before);
  std::sort(order.begin(), order.begin() + k);
  const size_t pb = PairBytes(dtype);
  if (residual != nullptr) std::memcpy(residual, g.data(), count * sizeof(float));
  for (size_t j = 0; j < k; ++j) {
    const uint32_t i = order[j];
    uint8_t* pair = pairs + j * pb;
    const uint8_t le[4] = {static_cast<uint8_t>(i), static_cast<uint8_t>(i >> 8),
                           static_cast<uint8_t>(i >> 16), static_cast<uint8_t>(i >> 24)};
    std::memcpy(pair, le, 4);
    const float sent = Store(g[i], dtype, pair + 4);
    if (residual != nullptr) residual[i] = g[i] - sent;
  }
}

Status SumPairs(const uint8_t* pairs, int nranks, size_t k, DType dtype, kernels::RedOp op,
                size_t count, void* recv) {
  std::vector<double> acc(count, 0.0);
  const size_t pb = PairBytes(dtype);
  for (size_t j = 0; j < static_cast<size_t>(nranks) * k; ++j) {
    const uint8_t* pair = pairs + j * pb;
    const uint32_t i = static_cast<uint32_t>(pair[0]) | static_cast<uint32_t>(pair[1]) << 8 |
                       static_cast<uint32_t>(pair[2]) << 16 | static_cast<uint32_t>(pair[3]) << 24;
    if (i >= count)
      return Status::Internal(StrFormat("top-k pair %zu of rank %zu names element %u of %zu",
                                        j % k, j / k, i, count));
    acc[i] += Load(pair + 4, dtype, 0);
  }
  const size_t es = kernels::DTypeSize(dtype);
  for (size_t i = 0; i < count; ++i) {
    const double v = op == kernels::RedOp::kAvg ? acc[i] / nranks : acc[i];
    Store(static_cast<float>(v), dtype, static_cast<uint8_t*>(recv) + i * es);
  }
  return Status::OK();
}

}  // namespace sieve::topk
