// The per-communicator registry of host residuals.
#include "ternary/residuals.h"

#include <cstring>
#include <map>
#include <mutex>
#include <tuple>

#include "core/aligned_alloc.h"

namespace sieve::ternary {

namespace {

// 64-byte aligned, so the quantizers' vector loads and stores of the residual never
// split a cache line (a std::vector's large block starts 16 bytes past a page).
struct Residual {
  AlignedArray<float> data;
  size_t elems = 0;
};

// Kept in the communicator's state (Comm::State).
struct HostResiduals {
  std::mutex mu;
  std::map<std::tuple<const void*, size_t, int, const void*>, Residual> by_buffer;
};

}  // namespace

float* HostResidualFor(Comm& comm, const void* send, size_t count, int dtype, const void* mask,
                       size_t elems) {
  if (elems == 0) return nullptr;  // as an empty vector's data() was
  HostResiduals& all = comm.State<HostResiduals>();
  std::lock_guard<std::mutex> lock(all.mu);
  Residual& r = all.by_buffer[std::make_tuple(send, count, dtype, mask)];
  if (r.data == nullptr || r.elems != elems) {
    r.data = AllocateAligned<float>(64, elems * sizeof(float));
    std::memset(r.data.get(), 0, elems * sizeof(float));
    r.elems = elems;
  }
  return r.data.get();
}

}  // namespace sieve::ternary
