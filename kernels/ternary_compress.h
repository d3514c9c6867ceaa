// The first pass of the masked + ternary all-reduce (src/ternary/masked_ternary.cc):
// the mask's kept elements gathered into a packed vector and that vector's block
// abs-max, in one read of the caller's buffer.
#ifndef SIEVE_KERNELS_TERNARY_COMPRESS_H_
#define SIEVE_KERNELS_TERNARY_COMPRESS_H_

#include <cstddef>
#include <cstdint>

#include "kernels/ternary.h"

namespace sieve::kernels {

// packed = MaskedCompress(src.data through `bits`, `count` dense positions), and
// scales = TernaryAbsMax of the packed vector (src with data = packed: dtype, block,
// and src.residual, if set, over packed positions; src.idx and src.bits unused).
// The same bits as the two kernels one after the other, but each step's maxima are
// taken while its packed elements are still in cache, so the dense input is read
// once and the packed vector is not read back from memory. Returns nnz and writes
// ceil(nnz / src.block) scales.
size_t TernaryCompressAbsMax(const TernarySource& src, const uint64_t* bits, size_t count,
                             void* packed, float* scales);

// The same pass made in parts: Through(end) goes on until at least `end` elements are
// packed (or the input ends), so a caller can send the first blocks' scales while the
// rest is gathered. The parts add up to TernaryCompressAbsMax's bits whatever the ends.
class TernaryCompressor {
 public:
  // The arguments as TernaryCompressAbsMax's; they must outlive the compressor.
  TernaryCompressor(const TernarySource& src, const uint64_t* bits, size_t count, void* packed,
                    float* scales);
  // Returns the elements packed so far: >= end, or every kept one once the input ends.
  // The scales of the blocks wholly below that count are final.
  size_t Through(size_t end);
  bool done() const { return next_ >= count_; }

 private:
  TernarySource packed_src_;  // src over the packed vector
  const char* in_;
  char* out_;  // the packed vector
  const uint64_t* bits_;
  size_t count_;
  float* scales_;
  size_t next_ = 0;  // the next dense position to compress (a multiple of 64)
  size_t nnz_ = 0;
};

}  // namespace sieve::kernels

#endif  // SIEVE_KERNELS_TERNARY_COMPRESS_H_
