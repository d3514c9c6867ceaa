// Scratch memory of the algorithms (receive buffers, encoded sends): host
// memory by default; a codec whose data lives elsewhere (device memory, see
// gpu/device_dense_codec.h) supplies its own allocator, so the ring and the
// tree are written once for both.
#ifndef SIEVE_ALGO_SCRATCH_H_
#define SIEVE_ALGO_SCRATCH_H_

#include <cstddef>
#include <utility>

#include "core/status.h"

namespace sieve::algo {

class ScratchAllocator {
 public:
  virtual ~ScratchAllocator() = default;
  // Memory the codec's kernels and the transport can both use, once returned.
  virtual Status Allocate(size_t bytes, void** out) = 0;
  virtual void Free(void* p) = 0;
};

// A growable buffer from an allocator (nullptr: the host heap). Growing does
// not keep the contents: scratch is always written before it is read.
class ScratchBuffer {
 public:
  explicit ScratchBuffer(ScratchAllocator* allocator = nullptr) : allocator_(allocator) {}
  ~ScratchBuffer() { Release(); }
  ScratchBuffer(ScratchBuffer&& other) noexcept { *this = std::move(other); }
  ScratchBuffer& operator=(ScratchBuffer&& other) noexcept;
  ScratchBuffer(const ScratchBuffer&) = delete;
  ScratchBuffer& operator=(const ScratchBuffer&) = delete;

  // Makes data() hold at least `bytes` (never shrinks).
  Status Reserve(size_t bytes);
  char* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  void Release();
  ScratchAllocator* allocator_ = nullptr;
  char* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace sieve::algo

#endif  // SIEVE_ALGO_SCRATCH_H_
