// Dispatch on element width for the kernels that move or test elements by their bits alone
// (masked pack/unpack, zero patterns): they need the element's size, not its dtype.
#ifndef SIEVE_KERNELS_BITS_TYPE_H_
#define SIEVE_KERNELS_BITS_TYPE_H_

#include <cstddef>
#include <cstdint>

namespace sieve::kernels {

// Returns fn(U{}) with U the unsigned integer of elem_size bytes: uint8_t, uint16_t,
// uint32_t, and uint64_t for any other size (callers pass 1, 2, 4 or 8).
template <typename Fn>
inline decltype(auto) WithBitsType(size_t elem_size, Fn&& fn) {
  switch (elem_size) {
    case 1:
      return fn(uint8_t{});
    case 2:
      return fn(uint16_t{});
    case 4:
      return fn(uint32_t{});
    default:
      return fn(uint64_t{});
  }
}

}  // namespace sieve::kernels

#endif  // SIEVE_KERNELS_BITS_TYPE_H_
