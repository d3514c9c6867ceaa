// Where the GPU path puts its progress thread and pinned staging memory: on
// the communicator's NUMA node (topo::Placement::numa, the node of its NIC,
// else of its GPU). The default asks topo (hwloc); tests substitute a
// recorder to see which node each part asked for.
#ifndef SIEVE_GPU_NUMA_PLACER_H_
#define SIEVE_GPU_NUMA_PLACER_H_

#include <cstddef>
#include <string>

#include "core/status.h"

namespace sieve::gpu {

class NumaPlacer {
 public:
  virtual ~NumaPlacer() = default;
  // As topo::BindThreadToNode, for the calling thread.
  virtual Status BindThisThread(int numa, bool* bound, std::string* what);
  // As topo::MapOnNode / UnmapOnNode: memory whose pages will come from `numa`.
  virtual void* MapOnNode(size_t bytes, int numa, std::string* why);
  virtual void Unmap(void* addr, size_t bytes);
};

// The hwloc-backed placer (shared, stateless).
NumaPlacer* DefaultNumaPlacer();

// Binds the calling thread as a progress thread is bound, and says in words
// what was done: numa < 0 (SIEVE_BIND=NONE, or no node nearest the NIC/GPU)
// leaves it alone; a failure is reported, never returned.
std::string BindProgressThread(NumaPlacer* placer, int numa);

}  // namespace sieve::gpu

#endif  // SIEVE_GPU_NUMA_PLACER_H_
