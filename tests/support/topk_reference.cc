// The top-k reference: each rank's g sorted by magnitude (stable: ties keep the lower
// index), the first k sent as rounded to the datatype, summed in rank order in double.
#include "support/topk_reference.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>

#include "kernels/dtype.h"

namespace sieve_test {

size_t TopKElemSize(sieveDataType_t t) { return t == sieveFloat32 ? 4 : 2; }

float TopKLoad(sieveDataType_t t, const uint8_t* p) {
  if (t == sieveFloat32) {
    float f;
    std::memcpy(&f, p, 4);
    return f;
  }
  uint16_t h;
  std::memcpy(&h, p, 2);
  return t == sieveFloat16 ? sieve::kernels::HalfToFloat(h) : sieve::kernels::Bf16ToFloat(h);
}

float TopKStore(sieveDataType_t t, float v, uint8_t* p) {
  if (t == sieveFloat32) {
    std::memcpy(p, &v, 4);
    return v;
  }
  uint16_t h = t == sieveFloat16 ? sieve::kernels::FloatToHalf(v) : sieve::kernels::FloatToBf16(v);
  std::memcpy(p, &h, 2);
  return TopKLoad(t, p);
}

size_t TopKKept(size_t count, double fraction) {
  if (count == 0) return 0;
  size_t k = static_cast<size_t>(std::ceil(fraction * static_cast<double>(count)));
  return std::min(count, std::max<size_t>(k, 1));
}

std::vector<uint8_t> ExpectedTopK(const std::vector<std::vector<uint8_t>>& inputs,
                                  sieveDataType_t t, sieveRedOp_t op, size_t count,
                                  double fraction, std::vector<std::vector<float>>* residuals) {
  const int n = static_cast<int>(inputs.size());
  const size_t k = TopKKept(count, fraction);
  std::vector<double> sum(count, 0.0);
  for (int r = 0; r < n; ++r) {
    std::vector<float> g(count);
    for (size_t i = 0; i < count; ++i)
      g[i] = TopKLoad(t, &inputs[r][i * TopKElemSize(t)]) +
             (residuals->empty() ? 0.0f : (*residuals)[r][i]);
    std::vector<size_t> idx(count);
    std::iota(idx.begin(), idx.end(), 0);
    std::stable_sort(idx.begin(), idx.end(), [&g](size_t a, size_t b) {
      return std::fabs(g[a]) > std::fabs(g[b]);
    });
    if (!residuals->empty()) (*residuals)[r] = g;
    for (size_t j = 0; j < k; ++j) {
      uint8_t bytes[4];
      const float sent = TopKStore(t, g[idx[j]], bytes);
      sum[idx[j]] += sent;
      if (!residuals->empty()) (*residuals)[r][idx[j]] = g[idx[j]] - sent;
    }
  }
  std::vector<uint8_t> out(count * TopKElemSize(t) + 1);
  for (size_t i = 0; i < count; ++i)
    TopKStore(t, static_cast<float>(op == sieveAvg ? sum[i] / n : sum[i]),
              &out[i * TopKElemSize(t)]);
  return out;
}

}  // namespace sieve_test
