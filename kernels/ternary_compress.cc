// TernaryCompressAbsMax / TernaryCompressor: MaskedCompress and TernaryAbsMax (each
// dispatched to its ISA path) interleaved a few thousand dense positions at a time.
#include "kernels/ternary_compress.h"

#include <algorithm>

#include "kernels/masked_pack.h"

namespace sieve::kernels {

namespace {

// Dense positions compressed per step (whole bitmap words): 16 KiB of float32
// input, and at most as many packed elements (plus an open block's part) for the
// abs-max that follows, which then reads them from L1 (48 KiB here); fewer
// steps would cost more in calls than they save.
constexpr size_t kStepWords = 64;

// Block maxima of two parts of one block, as TernaryAbsMax's max over magnitude
// bits would have taken them (a NaN scale, 0x7fc00000, wins as a NaN part did).
float CombineScales(float a, float b) {
  return TernaryScaleOfBits(std::max(TernaryMagnitudeBits(a), TernaryMagnitudeBits(b)));
}

// The abs-max of packed elements [from, to) into scales; the block holding
// `from` may already hold the maximum of its elements before `from`.
void FoldAbsMax(const TernarySource& packed, size_t from, size_t to, float* scales) {
  const size_t es = DTypeSize(packed.dtype), block = packed.block;
  auto at = [&](size_t j) {  // the source from packed element j (a block start, or one part)
    TernarySource s = packed;
    s.data = static_cast<const char*>(packed.data) + j * es;
    if (s.residual != nullptr) s.residual += j;
    return s;
  };
  if (from % block != 0 && from < to) {  // the rest of the open block, or part of it
    const size_t end = std::min(to, (from / block + 1) * block);
    float part;
    TernaryAbsMax(at(from), end - from, &part);
    scales[from / block] = CombineScales(scales[from / block], part);
    from = end;
  }
  if (from < to) TernaryAbsMax(at(from), to - from, scales + from / block);  // from a block start
}

}  // namespace

TernaryCompressor::TernaryCompressor(const TernarySource& src, const uint64_t* bits, size_t count,
                                     void* packed, float* scales)
    : packed_src_(src),
      in_(static_cast<const char*>(src.data)),
      out_(static_cast<char*>(packed)),
      bits_(bits),
      count_(count),
      scales_(scales) {
  packed_src_.data = packed;
  packed_src_.idx = nullptr;
  packed_src_.bits = nullptr;
}

size_t TernaryCompressor::Through(size_t end) {
  const size_t es = DTypeSize(packed_src_.dtype);
  while (nnz_ < end && next_ < count_) {
    const size_t n = std::min(count_ - next_, 64 * kStepWords);
    const size_t got =
        MaskedCompress(es, in_ + next_ * es, bits_ + next_ / 64, n, out_ + nnz_ * es);
    FoldAbsMax(packed_src_, nnz_, nnz_ + got, scales_);
    nnz_ += got;
    next_ += n;
  }
  return nnz_;
}

size_t TernaryCompressAbsMax(const TernarySource& src, const uint64_t* bits, size_t count,
                             void* packed, float* scales) {
  return TernaryCompressor(src, bits, count, packed, scales).Through(count);
}

}  // namespace sieve::kernels
