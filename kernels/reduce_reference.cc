// Scalar oracles for Reduce/DivideBy: one element at a time, a switch per element, every
// value widened to a 64-bit temporary. Slow on purpose; the tests trust these.
#include <cstdint>
#include <cstring>

#include "kernels/reduce.h"

namespace sieve::kernels {
namespace {

// A raw element widened: integers as their two's-complement bits (sign-extended when
// signed), floats as a double holding the exact float16/bfloat16/float32/float64 value.
struct Wide {
  uint64_t bits;
  double real;
};

bool IsSigned(DType dtype) {
  return dtype == DType::kInt8 || dtype == DType::kInt32 || dtype == DType::kInt64;
}

Wide Load(DType dtype, const void* base, size_t i) {
  const unsigned char* p = static_cast<const unsigned char*>(base) + i * DTypeSize(dtype);
  Wide w{0, 0.0};
  switch (dtype) {
    case DType::kInt8: {
      int8_t v;
      std::memcpy(&v, p, 1);
      w.bits = static_cast<uint64_t>(int64_t{v});
      break;
    }
    case DType::kUint8: {
      uint8_t v;
      std::memcpy(&v, p, 1);
      w.bits = v;
      break;
    }
    case DType::kInt32: {
      int32_t v;
      std::memcpy(&v, p, 4);
      w.bits = static_cast<uint64_t>(int64_t{v});
      break;
    }
    case DType::kUint32: {
      uint32_t v;
      std::memcpy(&v, p, 4);
      w.bits = v;
      break;
    }
    case DType::kInt64: {
      int64_t v;
      std::memcpy(&v, p, 8);
      w.bits = static_cast<uint64_t>(v);
      break;
    }
    case DType::kUint64: {
      std::memcpy(&w.bits, p, 8);
      break;
    }
    case DType::kFloat16: {
      uint16_t v;
      std::memcpy(&v, p, 2);
      w.real = HalfToFloat(v);
      break;
    }
    case DType::kBfloat16: {
      uint16_t v;
      std::memcpy(&v, p, 2);
      w.real = Bf16ToFloat(v);
      break;
    }
    case DType::kFloat32: {
      float v;
      std::memcpy(&v, p, 4);
      w.real = v;
      break;
    }
    case DType::kFloat64: {
      std::memcpy(&w.real, p, 8);
      break;
    }
  }
  return w;
}

// Writes the low bits (integers) or the value rounded once to the element type (floats).
void Store(DType dtype, void* base, size_t i, Wide w) {
  unsigned char* p = static_cast<unsigned char*>(base) + i * DTypeSize(dtype);
  switch (dtype) {
    case DType::kInt8:
    case DType::kUint8: {
      uint8_t v = static_cast<uint8_t>(w.bits);
      std::memcpy(p, &v, 1);
      break;
    }
    case DType::kInt32:
    case DType::kUint32: {
      uint32_t v = static_cast<uint32_t>(w.bits);
      std::memcpy(p, &v, 4);
      break;
    }
    case DType::kInt64:
    case DType::kUint64: {
      std::memcpy(p, &w.bits, 8);
      break;
    }
    case DType::kFloat16: {
      uint16_t v = FloatToHalf(static_cast<float>(w.real));
      std::memcpy(p, &v, 2);
      break;
    }
    case DType::kBfloat16: {
      uint16_t v = FloatToBf16(static_cast<float>(w.real));
      std::memcpy(p, &v, 2);
      break;
    }
    case DType::kFloat32: {
      float v = static_cast<float>(w.real);
      std::memcpy(p, &v, 4);
      break;
    }
    case DType::kFloat64: {
      std::memcpy(p, &w.real, 8);
      break;
    }
  }
}

// True when x > y for the element type's ordering (signed or unsigned integers).
bool IntGreater(DType dtype, uint64_t x, uint64_t y) {
  if (IsSigned(dtype)) return static_cast<int64_t>(x) > static_cast<int64_t>(y);
  return x > y;
}

Wide Combine(DType dtype, RedOp op, Wide x, Wide y) {
  Wide r{0, 0.0};
  if (!IsFloating(dtype)) {
    // Low bits of a 64-bit wrapped sum/product equal the narrow wrapped result.
    switch (op) {
      case RedOp::kSum:
      case RedOp::kAvg:
        r.bits = x.bits + y.bits;
        break;
      case RedOp::kProd:
        r.bits = x.bits * y.bits;
        break;
      case RedOp::kMax:
        r.bits = IntGreater(dtype, x.bits, y.bits) ? x.bits : y.bits;
        break;
      case RedOp::kMin:
        r.bits = IntGreater(dtype, y.bits, x.bits) ? x.bits : y.bits;
        break;
    }
    return r;
  }
  if (dtype == DType::kFloat64) {
    switch (op) {
      case RedOp::kSum:
      case RedOp::kAvg:
        r.real = x.real + y.real;
        break;
      case RedOp::kProd:
        r.real = x.real * y.real;
        break;
      case RedOp::kMax:
        r.real = x.real > y.real ? x.real : y.real;
        break;
      case RedOp::kMin:
        r.real = x.real < y.real ? x.real : y.real;
        break;
    }
    return r;
  }
  // float16/bfloat16/float32: the arithmetic is float32 arithmetic (not double, which
  // would round twice).
  const float fx = static_cast<float>(x.real);
  const float fy = static_cast<float>(y.real);
  float fr = 0.0f;
  switch (op) {
    case RedOp::kSum:
    case RedOp::kAvg:
      fr = fx + fy;
      break;
    case RedOp::kProd:
      fr = fx * fy;
      break;
    case RedOp::kMax:
      fr = fx > fy ? fx : fy;
      break;
    case RedOp::kMin:
      fr = fx < fy ? fx : fy;
      break;
  }
  r.real = fr;
  return r;
}

}  // namespace

void ReduceReference(DType dtype, RedOp op, const void* a, const void* b, void* out, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    Store(dtype, out, i, Combine(dtype, op, Load(dtype, a, i), Load(dtype, b, i)));
  }
}

void DivideByReference(DType dtype, void* buf, size_t n, int divisor) {
  if (divisor < 1) return;  // same contract as DivideBy
  for (size_t i = 0; i < n; ++i) {
    Wide w = Load(dtype, buf, i);
    if (!IsFloating(dtype)) {
      if (IsSigned(dtype)) {
        w.bits = static_cast<uint64_t>(static_cast<int64_t>(w.bits) / int64_t{divisor});
      } else {
        w.bits = w.bits / static_cast<uint64_t>(divisor);
      }
    } else if (dtype == DType::kFloat64) {
      w.real = w.real / static_cast<double>(divisor);
    } else {
      w.real = static_cast<float>(w.real) / static_cast<float>(divisor);
    }
    Store(dtype, buf, i, w);
  }
}

}  // namespace sieve::kernels
