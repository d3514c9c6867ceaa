// Zero-pattern kernels: 64 elements per bitmap word, a branch-free inner loop
// over a typed view of the data.
#include "kernels/nonzero.h"

#include <cstring>

#include "kernels/bits_type.h"

namespace sieve::kernels {

namespace {

// Bitmap word w of data's non-zeros: bit j - 64w set where data[j] != 0, j in word w's range.
template <typename T>
uint64_t NonzeroWord(const T* data, size_t w, size_t count) {
  size_t begin = w * 64, end = begin + 64 < count ? begin + 64 : count;
  uint64_t word = 0;
  for (size_t j = begin; j < end; ++j) word |= static_cast<uint64_t>(data[j] != 0) << (j - begin);
  return word;
}

template <typename T>
void BitmapOf(const T* data, size_t count, uint64_t* bits) {
  size_t words = (count + 63) / 64;
  for (size_t w = 0; w < words; ++w) bits[w] = NonzeroWord(data, w, count);
}

template <typename T>
bool AnyOutside(const T* data, const uint64_t* mask, size_t count) {
  size_t words = (count + 63) / 64;
  for (size_t w = 0; w < words; ++w) {
    if (mask[w] == ~uint64_t{0}) continue;  // every element kept: nothing to check
    if ((NonzeroWord(data, w, count) & ~mask[w]) != 0) return true;
  }
  return false;
}

}  // namespace

// Elements are compared as unsigned integers of their size: a bit-pattern test.
void NonzeroBitmap(size_t elem_size, const void* data, size_t count, uint64_t* bits) {
  WithBitsType(elem_size,
               [&](auto zero) { BitmapOf(static_cast<const decltype(zero)*>(data), count, bits); });
}

bool AnyNonzeroOutside(size_t elem_size, const void* data, const uint64_t* mask, size_t count) {
  return WithBitsType(elem_size, [&](auto zero) {
    return AnyOutside(static_cast<const decltype(zero)*>(data), mask, count);
  });
}

}  // namespace sieve::kernels
