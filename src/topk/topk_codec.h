// The top-k sparsifier's arithmetic, without ranks or messages: which k
// elements a rank keeps, how they are packed as (index, value) pairs, and how
// every rank's pairs are summed. The plan (topk_allreduce.h) moves the pairs.
#ifndef SIEVE_TOPK_TOPK_CODEC_H_
#define SIEVE_TOPK_TOPK_CODEC_H_

#include <cstddef>
#include <cstdint>

#include "core/status.h"
#include "kernels/dtype.h"

namespace sieve::topk {

// Indices travel in 32 bits: a call's count must be at most this.
constexpr uint64_t kMaxCount = uint64_t{1} << 32;

// k = ceil(fraction * count), at least 1 when count > 0, at most count.
// fraction in (0, 1]; the same on every rank for the same arguments.
size_t KeptElements(size_t count, double fraction);

// Bytes of one (index, value) pair on the wire: a little-endian uint32 index,
// then the value as `dtype` (2 or 4 bytes).
size_t PairBytes(kernels::DType dtype);

// Packs the k elements of largest magnitude of g = send (+ residual, when not
// null) into `pairs` (k * PairBytes bytes), by ascending index; ties in
// magnitude keep the lower index (NaN counts as the largest). g is formed in
// float32 and each kept value rounded once to dtype. With a residual (count
// floats), it becomes g minus what was sent (g itself where nothing was).
void SelectAndPack(const void* send, size_t count, kernels::DType dtype, size_t k,
                   float* residual, uint8_t* pairs);

// recv[i] = sum over ranks r = 0, 1, ... of rank r's value at i (0 where no
// rank kept i), added in double in rank order, divided by nranks for avg,
// rounded to float32, then to dtype: the same bits on every rank. `pairs` holds
// nranks blocks of k pairs; an index >= count (a corrupt peer) is an error.
Status SumPairs(const uint8_t* pairs, int nranks, size_t k, kernels::DType dtype,
              kernels::RedOp op, size_t count, void* recv);

}  // namespace sieve::topk

#endif  // SIEVE_TOPK_TOPK_CODEC_H_
