// OrCodec: input and work are one buffer, so "input (+) wire" and
// "work (+) wire" are the same OR.
#include "mask/or_codec.h"

#include <cstring>

namespace sieve::mask {

void OrCodec::ReduceInto(size_t offset, size_t elems, int, const void* wire, bool) {
  const uint64_t* w = static_cast<const uint64_t*>(wire);
  uint64_t* out = words_ + offset;
  for (size_t i = 0; i < elems; ++i) out[i] |= w[i];
}

void OrCodec::Decode(size_t offset, size_t elems, const void* wire) {
  if (wire != words_ + offset) std::memcpy(words_ + offset, wire, elems * sizeof(uint64_t));
}

}  // namespace sieve::mask
