// The quantized fan-out's message: scales of the chunk's blocks, then its packed sums.
#include "subnet/quantized_fan.h"

#include <cstring>
#include <vector>

namespace sieve::subnet {
namespace {

// The scale blocks [first, last] holding positions [begin, begin + elems).
size_t FirstBlock(const FanFormat& f, size_t begin) { return begin / f.block; }
size_t NumBlocks(const FanFormat& f, size_t begin, size_t elems) {
  return (begin + elems - 1) / f.block - FirstBlock(f, begin) + 1;
}

}  // namespace

FanFormat FanFormatOf(int senders, int levels, size_t block, kernels::DType dtype) {
  FanFormat f;
  f.dtype = dtype;
  f.block = block;
  f.width = kernels::TernaryBits(senders * levels);
  f.wt = kernels::TernaryWorkFor(senders, levels);
  f.divisor = senders * levels;
  return f;
}

size_t FanBytes(const FanFormat& f, size_t begin, size_t elems) {
  return NumBlocks(f, begin, elems) * sizeof(float) + kernels::TernaryPackedBytes(elems, f.width);
}

void EncodeFan(const FanFormat& f, size_t begin, size_t elems, const float* scales,
               const void* sums, void* msg) {
  const size_t nb = NumBlocks(f, begin, elems);
  std::memcpy(msg, scales + FirstBlock(f, begin), nb * sizeof(float));
  kernels::TernaryPack(f.wt, sums, elems, f.width, static_cast<char*>(msg) + nb * sizeof(float));
}

void DecodeFan(const FanFormat& f, const GroupRanges& ranges, size_t begin, size_t elems,
               const void* msg, char* recv) {
  const size_t nb = NumBlocks(f, begin, elems), first = FirstBlock(f, begin);
  std::vector<float> scales(nb);
  std::memcpy(scales.data(), msg, nb * sizeof(float));
  std::vector<char> sums(elems * static_cast<size_t>(f.wt));
  kernels::TernaryUnpack(f.wt, static_cast<const char*>(msg) + nb * sizeof(float), elems, f.width,
                         false, sums.data());
  const size_t es = kernels::DTypeSize(f.dtype);
  // Positions counted from the first block's start index the local scales alike.
  const size_t base = first * f.block;
  ranges.ForEachPiece(begin, elems, [&](size_t buf, size_t n, size_t pos) {
    kernels::TernaryDequantizeRange(f.dtype, f.wt, sums.data() + pos * static_cast<size_t>(f.wt),
                                    begin + pos - base, n, f.block, scales.data(), f.divisor,
                                    recv + buf * es);
  });
}

}  // namespace sieve::subnet
