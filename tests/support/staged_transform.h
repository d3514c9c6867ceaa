// A staged operation for progress-engine tests: out[i] = 3 * in[i] + 1 over
// uint32 words, chunk by chunk, a stand-in for the network part that a wrong
// slot, chunk or ordering would visibly break.
#ifndef SIEVE_TESTS_SUPPORT_STAGED_TRANSFORM_H_
#define SIEVE_TESTS_SUPPORT_STAGED_TRANSFORM_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "gpu/staged_op.h"

namespace sieve_test {

// `runs` counts chunks run; `during` runs inside each chunk's host part.
sieve::gpu::StagedOp Transform(CUstream_st* stream, const uint32_t* in, uint32_t* out, size_t n,
                               size_t chunk_words, size_t depth, std::atomic<int>* runs = nullptr,
                               std::function<void()> during = nullptr);

std::vector<uint32_t> RandomWords(size_t n, uint32_t seed);

// Asserts out[i] == 3 * in[i] + 1 for every word (gtest failures name the first miss).
void ExpectTransformed(const std::vector<uint32_t>& in, const std::vector<uint32_t>& out);

}  // namespace sieve_test

#endif  // SIEVE_TESTS_SUPPORT_STAGED_TRANSFORM_H_
