// TernaryCodec: quantization happens where the input is first read (Encode of
// one contribution, ReduceInto first, LoadInput), gathering through the mask
// when there is one and updating the error-feedback residual in the same pass,
// or is read from codes quantized beforehand (a device rank); later hops only
// repack sums; the last hop dequantizes.
#include "ternary/ternary_codec.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "kernels/masked_pack.h"

namespace sieve::algo {


TernaryCodec::TernaryCodec(const TernaryInput& input, const TernaryOutput& output, void* work,
                           int nranks)
    : in_(input),
      out_(output),
      work_(static_cast<char*>(work)),
      nranks_(nranks),
      wt_(kernels::TernaryWorkFor(nranks, input.src.levels)) {}

size_t TernaryCodec::WireBytes(size_t elems, int contributions) const {
  return kernels::TernaryPackedBytes(elems, Bits(contributions));
}

void TernaryCodec::LoadCodes(size_t offset, size_t elems) {
  kernels::TernaryUnpackAt(wt_, in_.quantized, offset, elems, Bits(1), /*accumulate=*/false,
                           Work(offset));
}

const void* TernaryCodec::Encode(size_t offset, size_t elems, int contributions, void* scratch) {
  if (contributions == 1 && in_.quantized != nullptr) {
    LoadCodes(offset, elems);  // the range's code image, re-aligned to bit 0 through work
    kernels::TernaryPack(wt_, Work(offset), elems, Bits(1), scratch);
  } else if (contributions == 1) {
    EnsureScales(offset, elems);
    kernels::TernaryQuantizePack(in_.src, offset, elems, Bits(1), scratch);
  } else {
    kernels::TernaryPack(wt_, Work(offset), elems, Bits(contributions), scratch);
  }
  return scratch;
}

void TernaryCodec::ReduceInto(size_t offset, size_t elems, int contributions, const void* wire,
                              bool first) {
  if (first && in_.quantized != nullptr) {
    LoadCodes(offset, elems);
    kernels::TernaryUnpack(wt_, wire, elems, Bits(contributions), /*accumulate=*/true,
                           Work(offset));
  } else if (first) {
    EnsureScales(offset, elems);
    kernels::TernaryQuantizeAdd(in_.src, offset, elems, wire, Bits(contributions), wt_,
                                Work(offset));
  } else {
    kernels::TernaryUnpack(wt_, wire, elems, Bits(contributions), /*accumulate=*/true,
                           Work(offset));
  }
}

void TernaryCodec::LoadInput(size_t offset, size_t elems) {
  if (in_.quantized != nullptr) return LoadCodes(offset, elems);
  EnsureScales(offset, elems);
  kernels::TernaryQuantizeAdd(in_.src, offset, elems, nullptr, Bits(1), wt_, Work(offset));
}

void TernaryCodec::LoadWire(size_t offset, size_t elems, const void* wire) {
  kernels::TernaryUnpack(wt_, wire, elems, Bits(1), /*accumulate=*/false, Work(offset));
}

void TernaryCodec::DecodeWires(size_t offset, size_t elems, const void* const* wires, int n) {
  EnsureScales(offset, elems);
  const int w = Bits(1);
  if (out_.bits == nullptr) {
    char* out = static_cast<char*>(out_.data) + offset * kernels::DTypeSize(in_.src.dtype);
    kernels::TernaryGatherDecode(in_.src.dtype, wt_, wires, n, w, offset, elems, in_.src.block,
                                 in_.src.scales, out_.divisor, out, out_.stores);
    return;
  }
  // Under a mask: the sums of a few thousand elements at a time in work, scattered
  // while in cache.
  constexpr size_t kChunk = 4096;  // elements (a multiple of 128: whole 2-bit vectors)
  std::vector<const void*> at(static_cast<size_t>(n));
  for (size_t i = 0; i < elems; i += kChunk) {
    const size_t cnt = std::min(kChunk, elems - i);
    for (int p = 0; p < n; ++p) at[p] = static_cast<const uint8_t*>(wires[p]) + i / 8 * w;
    kernels::TernaryGatherSum(wt_, at.data(), n, w, cnt, Work(offset + i));
    Dequantize(offset + i, cnt);
  }
}

void TernaryCodec::Decode(size_t offset, size_t elems, const void* wire) {
  if (out_.data == nullptr) {
    kernels::TernaryUnpack(wt_, wire, elems, Bits(nranks_), /*accumulate=*/false, Work(offset));
    return;
  }
  UnpackAndDequantize(offset, elems, wire, /*keep_sums=*/true);
  decoded_offset_ = offset, decoded_elems_ = elems, decoded_ = true;
}

void TernaryCodec::DecodeAndDeliver(size_t offset, size_t elems, const void* wire) {
  if (out_.data == nullptr) return Decode(offset, elems, wire);  // the sums stay in work
  UnpackAndDequantize(offset, elems, wire, /*keep_sums=*/false);
}

void TernaryCodec::UnpackAndDequantize(size_t offset, size_t elems, const void* wire,
                                       bool keep_sums) {
  constexpr size_t kChunk = 4096;  // elements (a multiple of 8: wire groups stay whole)
  alignas(64) char staged[kChunk * sizeof(int32_t)];  // the widest work element
  const int w = Bits(nranks_);
  const uint8_t* in = static_cast<const uint8_t*>(wire);
  for (size_t i = 0; i < elems; i += kChunk) {
    const size_t n = std::min(kChunk, elems - i);
    char* sums = keep_sums ? Work(offset + i) : staged;
    kernels::TernaryUnpack(wt_, in + i / 8 * static_cast<size_t>(w), n, w, /*accumulate=*/false,
                           sums);
    DequantizeFrom(sums, offset + i, n);
  }
}

void TernaryCodec::Deliver(size_t offset, size_t elems) {
  if (decoded_ && offset == decoded_offset_ && elems == decoded_elems_) {
    decoded_ = false;  // Decode delivered it
    return;
  }
  Dequantize(offset, elems);
}

void TernaryCodec::DequantizeFrom(const char* sums, size_t offset, size_t elems) {
  if (out_.data == nullptr) return;  // the sums stay in work for the caller
  EnsureScales(offset, elems);  // agreed before this rank quantized the range; kept cheap
  if (out_.bits == nullptr) {
    char* out = static_cast<char*>(out_.data) + offset * kernels::DTypeSize(in_.src.dtype);
    kernels::TernaryDequantizeRange(in_.src.dtype, wt_, sums, offset, elems, in_.src.block,
                                    in_.src.scales, out_.divisor, out, out_.stores);
    return;
  }
  size_t begin, end;
  kernels::MaskedDenseRange(out_.idx, out_.nnz, out_.count, offset, offset + elems, &begin, &end);
  kernels::TernaryDequantizeScatter(in_.src.dtype, wt_, sums, offset, in_.src.block, in_.src.scales,
                                    out_.divisor, out_.bits, begin, end, out_.data, out_.stores);
}

}  // namespace sieve::algo
