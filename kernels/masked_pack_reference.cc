// Scalar oracles of the masked kernels: byte copies element by element,
// combining through ReduceReference. Obviously right, not fast.
#include <cstring>

#include "kernels/masked_pack.h"
#include "kernels/reduce.h"

namespace sieve::kernels {

void MaskedPackReference(size_t elem_size, const void* in, const uint32_t* idx, size_t nnz,
                         void* out) {
  for (size_t k = 0; k < nnz; ++k)
    std::memcpy(static_cast<char*>(out) + k * elem_size,
                static_cast<const char*>(in) + idx[k] * elem_size, elem_size);
}

void MaskedGatherReduceReference(DType dtype, RedOp op, const void* in, const uint32_t* idx,
                                 const void* wire, void* out, size_t nnz) {
  const size_t es = DTypeSize(dtype);
  for (size_t k = 0; k < nnz; ++k) {
    ReduceReference(dtype, op, static_cast<const char*>(in) + idx[k] * es,
                    static_cast<const char*>(wire) + k * es, static_cast<char*>(out) + k * es, 1);
  }
}

void MaskedUnpackRangeReference(size_t elem_size, const void* packed, const uint64_t* bits,
                                size_t begin, size_t end, void* out) {
  size_t p = 0;
  for (size_t j = begin; j < end; ++j) {
    char* o = static_cast<char*>(out) + j * elem_size;
    if ((bits[j / 64] >> (j % 64)) & 1) {
      std::memcpy(o, static_cast<const char*>(packed) + p * elem_size, elem_size);
      ++p;
    } else {
      std::memset(o, 0, elem_size);
    }
  }
}

void MaskedUnpackReference(size_t elem_size, const void* packed, const uint64_t* bits,
                           size_t count, void* out) {
  MaskedUnpackRangeReference(elem_size, packed, bits, 0, count, out);
}

}  // namespace sieve::kernels
