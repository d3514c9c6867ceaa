// Heap blocks at a chosen alignment, released with free(). For buffers that vector or
// streaming stores walk: a large malloc block starts 16 bytes past a page, so every
// 64-byte store into it would split two cache lines.
#ifndef SIEVE_CORE_ALIGNED_ALLOC_H_
#define SIEVE_CORE_ALIGNED_ALLOC_H_

#include <cstddef>
#include <cstdlib>
#include <memory>
#include <new>

namespace sieve {

struct FreeDeleter {
  void operator()(void* p) const { std::free(p); }
};

template <typename T>
using AlignedArray = std::unique_ptr<T[], FreeDeleter>;

// `bytes` rounded up to a multiple of `align`: what AllocateAligned takes.
inline size_t AlignedBytes(size_t align, size_t bytes) {
  return (bytes + align - 1) / align * align;
}

// AlignedBytes(align, bytes) at an address that is a multiple of `align` (a power of
// two), not initialized; throws std::bad_alloc when there is no memory.
template <typename T>
AlignedArray<T> AllocateAligned(size_t align, size_t bytes) {
  AlignedArray<T> p(static_cast<T*>(std::aligned_alloc(align, AlignedBytes(align, bytes))));
  if (p == nullptr) throw std::bad_alloc();
  return p;
}

}  // namespace sieve

#endif  // SIEVE_CORE_ALIGNED_ALLOC_H_
