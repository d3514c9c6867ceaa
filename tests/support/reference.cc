// Input generator (splitmix64 of seed/rank/index) and the oracle, built on the
// scalar reference kernels (themselves checked against hand-computed values).
#include "support/reference.h"

#include <cstring>

#include "kernels/dtype.h"
#include "kernels/reduce.h"
#include "support/splitmix.h"

namespace sieve_test {

namespace k = sieve::kernels;

namespace {

double SmallValue(uint64_t bits, sieveRedOp_t op) {
  if (op == sieveProd) {
    static const double kProd[4] = {-2, -1, 1, 2};
    return kProd[bits % 4];
  }
  return static_cast<double>(static_cast<int>(bits % 9) - 4);  // [-4, 4]
}

void StoreFloat(sieveDataType_t dtype, double v, char* out) {
  switch (dtype) {
    case sieveFloat16: {
      uint16_t h = k::FloatToHalf(static_cast<float>(v));
      std::memcpy(out, &h, 2);
      break;
    }
    case sieveBfloat16: {
      uint16_t b = k::FloatToBf16(static_cast<float>(v));
      std::memcpy(out, &b, 2);
      break;
    }
    case sieveFloat32: {
      float f = static_cast<float>(v);
      std::memcpy(out, &f, 4);
      break;
    }
    default: std::memcpy(out, &v, 8);
  }
}

bool IsFloat(sieveDataType_t dtype) {
  return dtype == sieveFloat16 || dtype == sieveBfloat16 || dtype == sieveFloat32 ||
         dtype == sieveFloat64;
}

}  // namespace

size_t TypeSize(sieveDataType_t dtype) { return k::DTypeSize(static_cast<k::DType>(dtype)); }
const char* TypeName(sieveDataType_t dtype) { return k::DTypeName(static_cast<k::DType>(dtype)); }
const char* OpName(sieveRedOp_t op) { return k::RedOpName(static_cast<k::RedOp>(op)); }

void FillInput(uint64_t seed, int rank, sieveDataType_t dtype, sieveRedOp_t op, size_t offset,
               size_t count, void* out) {
  char* p = static_cast<char*>(out);
  size_t esize = TypeSize(dtype);
  uint64_t base = SplitMix(seed ^ (static_cast<uint64_t>(rank) << 48));
  for (size_t i = 0; i < count; ++i) {
    uint64_t bits = SplitMix(base + offset + i);
    if (IsFloat(dtype)) {
      StoreFloat(dtype, SmallValue(bits, op), p + i * esize);
    } else {
      std::memcpy(p + i * esize, &bits, esize);  // little-endian: low bytes
    }
  }
}

void ExpectedReduction(uint64_t seed, int nranks, sieveDataType_t dtype, sieveRedOp_t op,
                       size_t offset, size_t count, void* expected) {
  size_t bytes = count * TypeSize(dtype);
  std::vector<char> input(bytes);
  FillInput(seed, 0, dtype, op, offset, count, expected);
  k::DType kd = static_cast<k::DType>(dtype);
  k::RedOp ko = static_cast<k::RedOp>(op);
  for (int r = 1; r < nranks; ++r) {
    FillInput(seed, r, dtype, op, offset, count, input.data());
    k::ReduceReference(kd, ko, expected, input.data(), expected, count);
  }
  if (op == sieveAvg) k::DivideByReference(kd, expected, count, nranks);
}

size_t CountMismatches(const void* got, const void* expected, size_t count, size_t elem_size,
                       size_t* first) {
  const char* a = static_cast<const char*>(got);
  const char* b = static_cast<const char*>(expected);
  size_t wrong = 0;
  for (size_t i = 0; i < count; ++i) {
    if (std::memcmp(a + i * elem_size, b + i * elem_size, elem_size) != 0) {
      if (wrong == 0 && first != nullptr) *first = i;
      ++wrong;
    }
  }
  return wrong;
}

}  // namespace sieve_test
