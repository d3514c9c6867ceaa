// Element-type and reduction-op metadata: sizes and printable names.
#include "kernels/dtype.h"

namespace sieve::kernels {

size_t DTypeSize(DType dtype) {
  switch (dtype) {
    case DType::kInt8:
    case DType::kUint8:
      return 1;
    case DType::kFloat16:
    case DType::kBfloat16:
      return 2;
    case DType::kInt32:
    case DType::kUint32:
    case DType::kFloat32:
      return 4;
    case DType::kInt64:
    case DType::kUint64:
    case DType::kFloat64:
      return 8;
  }
  return 0;  // a value cast in from outside the enum
}

const char* DTypeName(DType dtype) {
  switch (dtype) {
    case DType::kInt8:
      return "int8";
    case DType::kUint8:
      return "uint8";
    case DType::kInt32:
      return "int32";
    case DType::kUint32:
      return "uint32";
    case DType::kInt64:
      return "int64";
    case DType::kUint64:
      return "uint64";
    case DType::kFloat16:
      return "float16";
    case DType::kFloat32:
      return "float32";
    case DType::kFloat64:
      return "float64";
    case DType::kBfloat16:
      return "bfloat16";
  }
  return "?";
}

const char* RedOpName(RedOp op) {
  switch (op) {
    case RedOp::kSum:
      return "sum";
    case RedOp::kProd:
      return "prod";
    case RedOp::kMax:
      return "max";
    case RedOp::kMin:
      return "min";
    case RedOp::kAvg:
      return "avg";
  }
  return "?";
}

bool IsFloating(DType dtype) {
  switch (dtype) {
    case DType::kFloat16:
    case DType::kFloat32:
    case DType::kFloat64:
    case DType::kBfloat16:
      return true;
    default:
      return false;
  }
}

}  // namespace sieve::kernels
