// The subnet oracle: element by element, an exact sum in double and one
// division, straight from the formulas (no ring, no chunks, no kernels).
#include "support/subnet_reference.h"

#include <algorithm>
#include <cstring>

#include "kernels/dtype.h"
#include "support/reference.h"

namespace sieve_test {
namespace {

namespace k = sieve::kernels;

double LoadValue(sieveDataType_t dtype, const char* p) {
  switch (dtype) {
    case sieveFloat16: {
      uint16_t h;
      std::memcpy(&h, p, 2);
      return k::HalfToFloat(h);
    }
    case sieveBfloat16: {
      uint16_t b;
      std::memcpy(&b, p, 2);
      return k::Bf16ToFloat(b);
    }
    case sieveFloat32: {
      float f;
      std::memcpy(&f, p, 4);
      return f;
    }
    default: {
      double d;
      std::memcpy(&d, p, 8);
      return d;
    }
  }
}

void StoreQuotient(sieveDataType_t dtype, double sum, int divisor, char* out) {
  if (dtype == sieveFloat64) {
    double q = sum / divisor;
    std::memcpy(out, &q, 8);
    return;
  }
  float q = static_cast<float>(sum) / static_cast<float>(divisor);
  if (dtype == sieveFloat32) {
    std::memcpy(out, &q, 4);
    return;
  }
  uint16_t h = dtype == sieveFloat16 ? k::FloatToHalf(q) : k::FloatToBf16(q);
  std::memcpy(out, &h, 2);
}

}  // namespace

TestLayout RandomLayout(std::mt19937_64& rng, int nranks, int nsegments, size_t max_length) {
  TestLayout layout(static_cast<size_t>(nsegments));
  size_t offset = 0;
  for (TestSegment& s : layout) {
    s.offset = offset;
    s.length = 1 + rng() % max_length;
    offset += s.length;
    switch (rng() % 4) {
      case 0:  // one holder
        s.holders = {static_cast<int>(rng() % nranks)};
        break;
      case 1:  // everyone
        for (int r = 0; r < nranks; ++r) s.holders.push_back(r);
        break;
      default:  // a random non-empty subset
        while (s.holders.empty())
          for (int r = 0; r < nranks; ++r)
            if (rng() % 2) s.holders.push_back(r);
    }
  }
  return layout;
}

size_t LayoutCount(const TestLayout& layout) {
  return layout.empty() ? 0 : layout.back().offset + layout.back().length;
}

std::vector<sieveSegment_t> ToApi(const TestLayout& layout) {
  std::vector<sieveSegment_t> out;
  for (const TestSegment& s : layout)
    out.push_back({s.offset, s.length, s.holders.data(), static_cast<int>(s.holders.size())});
  return out;
}

Touched RandomTouched(std::mt19937_64& rng, const TestLayout& layout, int nranks, double p) {
  Touched t(static_cast<size_t>(nranks), std::vector<uint8_t>(layout.size(), 0));
  for (size_t k = 0; k < layout.size(); ++k)
    for (int r : layout[k].holders) t[r][k] = (rng() % 1000) < p * 1000 ? 1 : 0;
  return t;
}

Touched UniformTouched(const TestLayout& layout, int nranks, bool all) {
  Touched t(static_cast<size_t>(nranks), std::vector<uint8_t>(layout.size(), 0));
  if (all)
    for (size_t k = 0; k < layout.size(); ++k)
      for (int r : layout[k].holders) t[r][k] = 1;
  return t;
}

std::vector<unsigned char> BitmapRow(const Touched& touched, int rank) {
  const std::vector<uint8_t>& row = touched[rank];
  std::vector<unsigned char> bits((row.size() + 7) / 8, 0);
  for (size_t k = 0; k < row.size(); ++k)
    if (row[k]) bits[k / 8] |= static_cast<unsigned char>(1u << (k % 8));
  return bits;
}

std::vector<unsigned char> ScheduleTable(const Touched& touched) {
  std::vector<unsigned char> table;
  for (size_t r = 0; r < touched.size(); ++r) {
    std::vector<unsigned char> row = BitmapRow(touched, static_cast<int>(r));
    table.insert(table.end(), row.begin(), row.end());
  }
  return table;
}

std::vector<int> Contributors(const TestLayout& layout, const Touched* touched, size_t k) {
  if (touched == nullptr) return layout[k].holders;
  std::vector<int> out;
  for (size_t r = 0; r < touched->size(); ++r)
    if ((*touched)[r][k]) out.push_back(static_cast<int>(r));
  return out;
}

void ExpectedSubnet(uint64_t seed, int nranks, int rank, sieveDataType_t dtype,
                    const TestLayout& layout, const Touched* touched, const void* before,
                    void* expected) {
  const size_t count = LayoutCount(layout), es = TypeSize(dtype);
  std::vector<std::vector<char>> inputs(static_cast<size_t>(nranks), std::vector<char>(count * es));
  for (int r = 0; r < nranks; ++r) FillInput(seed, r, dtype, sieveSum, 0, count, inputs[r].data());
  std::memcpy(expected, before, count * es);
  char* out = static_cast<char*>(expected);
  for (size_t k = 0; k < layout.size(); ++k) {
    const std::vector<int>& holders = layout[k].holders;
    if (!std::binary_search(holders.begin(), holders.end(), rank)) continue;
    std::vector<int> t = Contributors(layout, touched, k);
    if (t.empty()) continue;
    for (size_t i = layout[k].offset; i < layout[k].offset + layout[k].length; ++i) {
      double sum = 0;
      for (int r : t) sum += LoadValue(dtype, &inputs[r][i * es]);
      StoreQuotient(dtype, sum, static_cast<int>(t.size()), out + i * es);
    }
  }
}

}  // namespace sieve_test
