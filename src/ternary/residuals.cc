// The per-communicator registry of host residuals.
#include "ternary/residuals.h"

#include <map>
#include <mutex>
#include <tuple>
#include <vector>

namespace sieve::ternary {

namespace {

// Kept in the communicator's state (Comm::State).
struct HostResiduals {
  std::mutex mu;
  std::map<std::tuple<const void*, size_t, int, const void*>, std::vector<float>> by_buffer;
};

}  // namespace

float* HostResidualFor(Comm& comm, const void* send, size_t count, int dtype, const void* mask,
                       size_t elems) {
  HostResiduals& all = comm.State<HostResiduals>();
  std::lock_guard<std::mutex> lock(all.mu);
  std::vector<float>& r = all.by_buffer[std::make_tuple(send, count, dtype, mask)];
  if (r.size() != elems) r.assign(elems, 0.0f);
  return r.data();
}

}  // namespace sieve::ternary
