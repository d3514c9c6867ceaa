// The ternary oracle, written from DESIGN.md 1.3 one element at a time; only
// the Philox generator (checked against known answers) is shared with the library.
#include "support/ternary_reference.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels/dtype.h"
#include "kernels/philox.h"
#include "support/splitmix.h"

namespace sieve_test {

namespace {

// Rank r's input as the ternary all-reduce sees it: every element, or only the
// kept ones in order. Returns the number of elements.
size_t QuantizedInput(const TernaryCase& c, int r, std::vector<char>* in) {
  std::vector<char> full(c.count * 4);
  FillTernaryInput(c.input_seed, r, c.dtype, c.count, full.data());
  if (c.kept == nullptr) {
    *in = std::move(full);
    return c.count;
  }
  size_t esize = c.dtype == sieveFloat32 ? 4 : 2, n = 0;
  in->assign(c.count * 4, 0);
  for (size_t j = 0; j < c.count; ++j)
    if ((*c.kept)[j]) std::memcpy(in->data() + esize * n++, full.data() + esize * j, esize);
  return n;
}

size_t KeptCount(const TernaryCase& c) {
  if (c.kept == nullptr) return c.count;
  size_t n = 0;
  for (size_t j = 0; j < c.count; ++j) n += (*c.kept)[j];
  return n;
}

}  // namespace

float LoadWidened(sieveDataType_t dtype, const void* buf, size_t j) {
  if (dtype == sieveFloat32) return static_cast<const float*>(buf)[j];
  uint16_t h = static_cast<const uint16_t*>(buf)[j];
  return dtype == sieveFloat16 ? sieve::kernels::HalfToFloat(h) : sieve::kernels::Bf16ToFloat(h);
}

void FillTernaryInput(uint64_t seed, int rank, sieveDataType_t dtype, size_t count, void* out) {
  static const float kMagnitude[3] = {1.0f, 0.125f, 8.0f};
  for (size_t j = 0; j < count; ++j) {
    uint64_t bits = SplitMix(SplitMix(seed * 1000003 + static_cast<uint64_t>(rank)) + j);
    float u = static_cast<float>(bits >> 40) / 16777216.0f;  // [0, 1)
    float g = (2.0f * u - 1.0f) * kMagnitude[(j / 256) % 3];
    if (j % 13 == 0) g = 0.0f;
    if (dtype == sieveFloat32) {
      static_cast<float*>(out)[j] = g;
    } else {
      uint16_t h = dtype == sieveFloat16 ? sieve::kernels::FloatToHalf(g)
                                         : sieve::kernels::FloatToBf16(g);
      static_cast<uint16_t*>(out)[j] = h;
    }
  }
}

std::vector<float> ExpectedScales(const TernaryCase& c) {
  const size_t count = KeptCount(c);
  std::vector<float> scales((count + c.block - 1) / c.block, 0.0f);
  std::vector<char> in;
  for (int r = 0; r < c.nranks; ++r) {
    QuantizedInput(c, r, &in);
    for (size_t j = 0; j < count; ++j)
      scales[j / c.block] =
          std::fmax(scales[j / c.block], std::fabs(LoadWidened(c.dtype, in.data(), j)));
  }
  return scales;
}

std::vector<int> ExpectedSums(const TernaryCase& c, const std::vector<float>& scales) {
  const size_t count = KeptCount(c);
  std::vector<int> sums(count, 0);
  std::vector<char> in;
  for (int r = 0; r < c.nranks; ++r) {
    QuantizedInput(c, r, &in);
    sieve::kernels::PhiloxStream rng{c.seed, static_cast<uint32_t>(r), c.step};
    for (size_t j = 0; j < count; ++j) {
      float g = LoadWidened(c.dtype, in.data(), j), s = scales[j / c.block];
      float u = static_cast<float>(sieve::kernels::PhiloxQuad(rng, j / 4).v[j % 4] >> 8) *
                (1.0f / 16777216.0f);
      if (s > 0.0f && u < std::fabs(g) / s) sums[j] += g < 0.0f ? -1 : 1;
    }
  }
  return sums;
}

std::vector<char> ExpectedTernary(const TernaryCase& c) {
  std::vector<float> scales = ExpectedScales(c);
  std::vector<int> sums = ExpectedSums(c, scales);
  std::vector<char> out(c.count * (c.dtype == sieveFloat32 ? 4 : 2));
  for (size_t j = 0, k = 0; j < c.count; ++j) {
    if (c.kept != nullptr && !(*c.kept)[j]) continue;  // masked out: stays 0 (all-zero bits)
    float v = scales[k / c.block] * static_cast<float>(sums[k]);
    ++k;
    if (c.op == sieveAvg) v /= static_cast<float>(c.nranks);
    if (c.dtype == sieveFloat32) {
      std::memcpy(out.data() + 4 * j, &v, 4);
    } else {
      uint16_t h = c.dtype == sieveFloat16 ? sieve::kernels::FloatToHalf(v)
                                           : sieve::kernels::FloatToBf16(v);
      std::memcpy(out.data() + 2 * j, &h, 2);
    }
  }
  return out;
}

namespace {

void StoreRounded(sieveDataType_t t, void* buf, size_t j, float v) {
  if (t == sieveFloat32) {
    static_cast<float*>(buf)[j] = v;
  } else {
    static_cast<uint16_t*>(buf)[j] =
        t == sieveFloat16 ? sieve::kernels::FloatToHalf(v) : sieve::kernels::FloatToBf16(v);
  }
}

}  // namespace

// Expected result of the hierarchical ternary all-reduce on 2 ranks per host:
// host h's input is the sum of its two ranks' inputs rounded to the type; the
// buffer is cut into one slice per local rank at block boundaries; slice i of
// host h is quantized with the Philox stream of rank h*2+i, indices counted
// from the slice start, scales per block over the hosts; avg divides by n.
std::vector<char> ExpectedHierTernary(const std::vector<std::vector<char>>& inputs,
                                      sieveDataType_t t, sieveRedOp_t op, size_t count,
                                      size_t block, uint64_t seed, uint64_t step) {
  const int n = static_cast<int>(inputs.size()), local = 2, hosts = n / local;
  std::vector<std::vector<float>> host_sum(hosts, std::vector<float>(count));
  for (int h = 0; h < hosts; ++h)
    for (size_t j = 0; j < count; ++j) {
      std::vector<char> one(4);
      float v =
          LoadWidened(t, inputs[h * 2].data(), j) + LoadWidened(t, inputs[h * 2 + 1].data(), j);
      StoreRounded(t, one.data(), 0, v);
      host_sum[h][j] = LoadWidened(t, one.data(), 0);
    }
  size_t blocks = (count + block - 1) / block;
  std::vector<size_t> slice(local + 1);
  for (int i = 0; i <= local; ++i) slice[i] = std::min(count, blocks * i / local * block);
  std::vector<char> out(count * (t == sieveFloat32 ? 4 : 2));
  for (int i = 0; i < local; ++i) {
    for (size_t j = slice[i]; j < slice[i + 1]; ++j) {
      size_t rel = j - slice[i];
      size_t b0 = slice[i] + rel / block * block, b1 = std::min(slice[i + 1], b0 + block);
      float s = 0;
      for (int h = 0; h < hosts; ++h)
        for (size_t k = b0; k < b1; ++k) s = std::fmax(s, std::fabs(host_sum[h][k]));
      int q = 0;
      for (int h = 0; h < hosts; ++h) {
        sieve::kernels::PhiloxStream rng{seed, static_cast<uint32_t>(h * local + i), step};
        float u = static_cast<float>(sieve::kernels::PhiloxQuad(rng, rel / 4).v[rel % 4] >> 8) *
                  (1.0f / 16777216.0f);
        float g = host_sum[h][j];
        if (s > 0.0f && u < std::fabs(g) / s) q += g < 0.0f ? -1 : 1;
      }
      float v = s * static_cast<float>(q);
      if (op == sieveAvg) v /= static_cast<float>(n);
      StoreRounded(t, out.data(), j, v);
    }
  }
  return out;
}

}  // namespace sieve_test
