// TernaryCodec: quantization happens where the input is first read (Encode of
// one contribution, ReduceInto first, LoadInput), gathering through the mask
// when there is one and updating the error-feedback residual in the same pass,
// or is read from codes quantized beforehand (a device rank); later hops only
// repack sums; the last hop dequantizes.
#include "ternary/ternary_codec.h"

#include <cstring>

#include "kernels/masked_pack.h"

namespace sieve::algo {

using kernels::TernaryBits;

TernaryCodec::TernaryCodec(const TernaryInput& input, const TernaryOutput& output, void* work,
                           int nranks)
    : in_(input),
      out_(output),
      work_(static_cast<char*>(work)),
      nranks_(nranks),
      wt_(kernels::TernaryWorkFor(nranks)) {}

size_t TernaryCodec::WireBytes(size_t elems, int contributions) const {
  return kernels::TernaryPackedBytes(elems, TernaryBits(contributions));
}

void TernaryCodec::LoadCodes(size_t offset, size_t elems) {
  kernels::TernaryUnpackAt(wt_, in_.quantized, offset, elems, TernaryBits(1), /*accumulate=*/false,
                           Work(offset));
}

const void* TernaryCodec::Encode(size_t offset, size_t elems, int contributions, void* scratch) {
  if (contributions == 1 && in_.quantized != nullptr) {
    LoadCodes(offset, elems);  // the range's 2-bit image, re-aligned to bit 0 through work
    kernels::TernaryPack(wt_, Work(offset), elems, TernaryBits(1), scratch);
  } else if (contributions == 1) {
    kernels::TernaryQuantizePack(in_.src, offset, elems, TernaryBits(1), scratch);
  } else {
    kernels::TernaryPack(wt_, Work(offset), elems, TernaryBits(contributions), scratch);
  }
  return scratch;
}

void TernaryCodec::ReduceInto(size_t offset, size_t elems, int contributions, const void* wire,
                              bool first) {
  if (first && in_.quantized != nullptr) {
    LoadCodes(offset, elems);
    kernels::TernaryUnpack(wt_, wire, elems, TernaryBits(contributions), /*accumulate=*/true,
                           Work(offset));
  } else if (first) {
    kernels::TernaryQuantizeAdd(in_.src, offset, elems, wire, TernaryBits(contributions), wt_,
                                Work(offset));
  } else {
    kernels::TernaryUnpack(wt_, wire, elems, TernaryBits(contributions), /*accumulate=*/true,
                           Work(offset));
  }
}

void TernaryCodec::LoadInput(size_t offset, size_t elems) {
  if (in_.quantized != nullptr) return LoadCodes(offset, elems);
  kernels::TernaryQuantizeAdd(in_.src, offset, elems, nullptr, TernaryBits(1), wt_, Work(offset));
}

void TernaryCodec::Decode(size_t offset, size_t elems, const void* wire) {
  kernels::TernaryUnpack(wt_, wire, elems, TernaryBits(nranks_), /*accumulate=*/false,
                         Work(offset));
}

void TernaryCodec::Deliver(size_t offset, size_t elems) {
  if (out_.data == nullptr) return;  // the sums stay in work for the caller
  if (out_.bits == nullptr) {
    char* out = static_cast<char*>(out_.data) + offset * kernels::DTypeSize(in_.src.dtype);
    kernels::TernaryDequantizeRange(in_.src.dtype, wt_, Work(offset), offset, elems,
                                    in_.src.block, in_.src.scales, out_.divisor, out);
    return;
  }
  size_t begin, end;
  kernels::MaskedDenseRange(out_.idx, out_.nnz, out_.count, offset, offset + elems, &begin, &end);
  kernels::TernaryDequantizeScatter(in_.src.dtype, wt_, Work(offset), offset, in_.src.block,
                                    in_.src.scales, out_.divisor, out_.bits, begin, end,
                                    out_.data);
}

}  // namespace sieve::algo
