// TernaryCompressAbsMax: MaskedCompress and TernaryAbsMax (each dispatched to its
// ISA path) interleaved a few thousand dense positions at a time.
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

size_t TernaryCompressAbsMax(const TernarySource& src, const uint64_t* bits, size_t count,
                             void* packed, float* scales) {
  const size_t es = DTypeSize(src.dtype);
  TernarySource p = src;
  p.data = packed;
  p.idx = nullptr;
  p.bits = nullptr;
  const char* in = static_cast<const char*>(src.data);
  char* out = static_cast<char*>(packed);
  size_t nnz = 0;
  for (size_t j = 0; j < count; j += 64 * kStepWords) {
    const size_t n = std::min(count - j, 64 * kStepWords);
    const size_t got = MaskedCompress(es, in + j * es, bits + j / 64, n, out + nnz * es);
    FoldAbsMax(p, nnz, nnz + got, scales);
    nnz += got;
  }
  return nnz;
}

}  // namespace sieve::kernels
