// The progress-engine tests' stand-in operation and its reference.
#include "support/staged_transform.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

namespace sieve_test {

sieve::gpu::StagedOp Transform(CUstream_st* stream, const uint32_t* in, uint32_t* out, size_t n,
                               size_t chunk_words, size_t depth, std::atomic<int>* runs,
                               std::function<void()> during) {
  sieve::gpu::StagedOp op;
  op.name = "transform";
  op.stream = stream;
  op.depth = depth;
  for (size_t off = 0; off < n; off += chunk_words) {
    size_t len = std::min(chunk_words, n - off);
    sieve::gpu::StagedChunk c;
    c.bytes = len * 4;
    c.in.push_back({0, const_cast<uint32_t*>(in + off), len * 4});
    c.out.push_back({0, out + off, len * 4});
    c.run = [len, runs, during](char* staging) {
      if (during) during();
      uint32_t* w = reinterpret_cast<uint32_t*>(staging);
      for (size_t i = 0; i < len; ++i) w[i] = 3 * w[i] + 1;
      if (runs) ++*runs;
      return sieve::Status::OK();
    };
    op.chunks.push_back(std::move(c));
  }
  return op;
}

std::vector<uint32_t> RandomWords(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint32_t> v(n);
  for (auto& x : v) x = rng();
  return v;
}

void ExpectTransformed(const std::vector<uint32_t>& in, const std::vector<uint32_t>& out) {
  ASSERT_EQ(in.size(), out.size());
  for (size_t i = 0; i < in.size(); ++i) ASSERT_EQ(out[i], 3 * in[i] + 1) << "word " << i;
}

}  // namespace sieve_test
