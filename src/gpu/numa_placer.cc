// The default NUMA placer: topo's hwloc binding.
#include "gpu/numa_placer.h"

#include "topo/machine.h"

namespace sieve::gpu {

Status NumaPlacer::BindThisThread(int numa, bool* bound, std::string* what) {
  return topo::BindThreadToNode(numa, bound, what);
}

void* NumaPlacer::MapOnNode(size_t bytes, int numa, std::string* why) {
  return topo::MapOnNode(bytes, numa, why);
}

void NumaPlacer::Unmap(void* addr, size_t bytes) { topo::UnmapOnNode(addr, bytes); }

NumaPlacer* DefaultNumaPlacer() {
  static NumaPlacer placer;
  return &placer;
}

std::string BindProgressThread(NumaPlacer* placer, int numa) {
  if (numa < 0) return "not bound (no NUMA node chosen: SIEVE_BIND=NONE or none known)";
  bool bound = false;
  std::string what;
  Status st = placer->BindThisThread(numa, &bound, &what);
  return st.ok() ? what : "not bound (" + st.message() + ")";
}

}  // namespace sieve::gpu
