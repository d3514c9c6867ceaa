// CUDA masked pack/unpack: grid-stride element copies by index (pure moves, so
// bit-identical to the CPU kernels); gather-reduce reuses ReduceCuda's arithmetic.
// Launched on the caller's stream; never synchronizes.
#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/cuda/masked_pack_device.cuh"
#include "kernels/masked_pack_cuda.h"
#include "kernels/reduce_cuda.h"

namespace sieve::kernels {
namespace {

unsigned Blocks(size_t n) {
  size_t blocks = (n + 255) / 256;
  return static_cast<unsigned>(blocks < 65535 ? (blocks > 0 ? blocks : 1) : 65535);
}

// Bytes per element (dtype.cc is not linked into the CUDA library).
size_t ElemSize(DType dtype) {
  switch (dtype) {
    case DType::kInt8: case DType::kUint8: return 1;
    case DType::kFloat16: case DType::kBfloat16: return 2;
    case DType::kInt32: case DType::kUint32: case DType::kFloat32: return 4;
    default: return 8;
  }
}

template <typename T>
int Pack(const void* in, const uint32_t* idx, size_t nnz, void* out, cudaStream_t s) {
  PackKernel<T><<<Blocks(nnz), 256, 0, s>>>(static_cast<const T*>(in), idx, nnz,
                                            static_cast<T*>(out));
  return static_cast<int>(cudaGetLastError());
}

template <typename T>
int Unpack(const void* packed, const uint32_t* idx, size_t nnz, const uint64_t* bits,
           size_t begin, size_t end, void* out, cudaStream_t s) {
  ZeroClearedKernel<T><<<Blocks(end - begin), 256, 0, s>>>(bits, begin, end,
                                                           static_cast<T*>(out));
  if (nnz > 0)
    ScatterKernel<T><<<Blocks(nnz), 256, 0, s>>>(static_cast<const T*>(packed), idx, nnz,
                                                 static_cast<T*>(out));
  return static_cast<int>(cudaGetLastError());
}

}  // namespace

int MaskedPackCuda(size_t elem_size, const void* in, const uint32_t* idx, size_t nnz, void* out,
                   void* stream) {
  if (nnz == 0) return 0;
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  switch (elem_size) {
    case 1: return Pack<uint8_t>(in, idx, nnz, out, s);
    case 2: return Pack<uint16_t>(in, idx, nnz, out, s);
    case 4: return Pack<uint32_t>(in, idx, nnz, out, s);
    case 8: return Pack<uint64_t>(in, idx, nnz, out, s);
  }
  return static_cast<int>(cudaErrorInvalidValue);
}

int MaskedGatherReduceCuda(DType dtype, RedOp op, const void* in, const uint32_t* idx,
                           const void* wire, void* out, size_t nnz, void* stream) {
  int err = MaskedPackCuda(ElemSize(dtype), in, idx, nnz, out, stream);
  if (err != 0) return err;
  return ReduceCuda(dtype, op, out, wire, out, nnz, stream);
}

int MaskedUnpackRangeCuda(size_t elem_size, const void* packed, const uint32_t* idx, size_t nnz,
                          const uint64_t* bits, size_t begin, size_t end, void* out,
                          void* stream) {
  if (end <= begin) return 0;
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  switch (elem_size) {
    case 1: return Unpack<uint8_t>(packed, idx, nnz, bits, begin, end, out, s);
    case 2: return Unpack<uint16_t>(packed, idx, nnz, bits, begin, end, out, s);
    case 4: return Unpack<uint32_t>(packed, idx, nnz, bits, begin, end, out, s);
    case 8: return Unpack<uint64_t>(packed, idx, nnz, bits, begin, end, out, s);
  }
  return static_cast<int>(cudaErrorInvalidValue);
}

int MaskedUnpackCuda(size_t elem_size, const void* packed, const uint32_t* idx, size_t nnz,
                     const uint64_t* bits, size_t count, void* out, void* stream) {
  return MaskedUnpackRangeCuda(elem_size, packed, idx, nnz, bits, 0, count, out, stream);
}

}  // namespace sieve::kernels
