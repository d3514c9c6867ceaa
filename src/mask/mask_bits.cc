// Mask normalization, hashing and index building: single passes over the mask.
#include "mask/mask_bits.h"

#include <cstring>

#include "core/mix64.h"

namespace sieve::mask {
namespace {

void FromBytes(const unsigned char* bytes, size_t count, uint64_t* words) {
  for (size_t base = 0; base < count; base += 64) {
    const size_t m = count - base < 64 ? count - base : 64;
    uint64_t w = 0;
    for (size_t i = 0; i < m; ++i) w |= static_cast<uint64_t>(bytes[base + i] != 0) << i;
    words[base / 64] = w;
  }
}

}  // namespace

void Normalize(const void* mask, Format format, size_t count, std::vector<uint64_t>* bits) {
  bits->assign(BitmapWords(count), 0);
  if (count == 0) return;
  if (format == Format::kBytes) {
    FromBytes(static_cast<const unsigned char*>(mask), count, bits->data());
    return;
  }
  // LSB-first bytes are a little-endian word image (x86, aarch64): copy, then clear the tail.
  std::memcpy(bits->data(), mask, (count + 7) / 8);
  if (count % 64 != 0) bits->back() &= (uint64_t{1} << (count % 64)) - 1;
}

uint64_t MaskHash(size_t count, const std::vector<uint64_t>& bits) {
  uint64_t h = Mix64(count ^ 0x5349455645u);
  for (size_t i = 0; i < bits.size(); ++i)
    h = Mix64(h ^ Mix64(bits[i] + i * 0x9e3779b97f4a7c15ull));
  return h;
}

Status BuildIndex(const std::vector<uint64_t>& bits, size_t count, std::vector<uint32_t>* idx) {
  size_t nnz = 0;
  for (uint64_t w : bits) nnz += static_cast<size_t>(__builtin_popcountll(w));
  if (nnz > 0 && count - 1 > UINT32_MAX) {
    return Status::InvalidArgument(StrFormat(
        "masked mode indexes elements with 32 bits; count %zu exceeds %u", count, UINT32_MAX));
  }
  idx->resize(nnz);
  size_t k = 0;
  for (size_t wi = 0; wi < bits.size(); ++wi) {
    for (uint64_t w = bits[wi]; w != 0; w &= w - 1)
      (*idx)[k++] = static_cast<uint32_t>(wi * 64 + __builtin_ctzll(w));
  }
  return Status::OK();
}

}  // namespace sieve::mask
