// What hwloc sees of this machine: NUMA nodes and their distances, cores,
// and the PCI devices that matter for placement (NICs, RDMA devices, GPUs)
// with the NUMA node each one hangs off.
#ifndef SIEVE_TOPO_MACHINE_H_
#define SIEVE_TOPO_MACHINE_H_

#include <string>
#include <vector>

#include "core/status.h"

namespace sieve::topo {

struct Device {
  enum Kind { kNet, kRdma, kGpu };
  Kind kind = kNet;
  std::string name;  // OS name: "eth0", "mlx5_0", "cuda0" / "card0"
  std::string pci;   // "0000:3b:00.0" ("" if not on PCI)
  int numa = -1;     // logical index of its nearest NUMA node (-1: unknown)
  std::string cpus;  // its locality as a CPU list ("0-15"), "" if unknown
};

struct Machine {
  std::string hwloc_version;  // of the hwloc Sieve was built with
  int numa_nodes = 0;         // 0 when hwloc reports none
  int cores = 0;
  int pus = 0;
  std::vector<Device> devices;
  // numa_nodes x numa_nodes relative distances (row-major); empty if unknown.
  std::vector<unsigned long> distances;
  // NUMA node(s) this process may run on, as indices, and its CPU list.
  std::vector<int> my_numa;
  std::string my_cpus;

  // "2 NUMA nodes, 32 cores, 64 PUs; NICs eth0 (node 0), RDMA mlx5_0 (node 1); GPUs none"
  std::string Summary() const;
};

// The machine as hwloc sees it, loaded once per process (later calls return
// the same). Never fails the caller: hwloc errors leave an empty machine and
// are reported in *note.
const Machine& LoadMachine(std::string* note = nullptr);

// Binds [addr, addr+bytes) to NUMA node `numa` (logical index). A machine with
// one NUMA node (or none), or a null/empty area, is left alone (returns false).
bool BindArea(void* addr, size_t bytes, int numa);

// Binds the calling thread to the CPUs of NUMA node `numa` that this process
// may run on (its affinity when the machine was loaded), so a user's taskset
// or cgroup is narrowed, never widened. OK with *bound set when it did; OK
// with *bound false when there is nothing to choose (one NUMA node, or none of
// this process's CPUs on that node); an error when `numa` names no node or the
// OS refuses. *what says what was done, or why not, for the log.
Status BindThreadToNode(int numa, bool* bound, std::string* what);

// `bytes` (rounded up to whole pages) of anonymous memory bound to node `numa`
// before any page is touched, so each page comes from that node when first
// faulted in. nullptr with *why when not placed (fewer than two NUMA nodes,
// no such node, mmap or binding refused). Freed with UnmapOnNode.
void* MapOnNode(size_t bytes, int numa, std::string* why);
void UnmapOnNode(void* addr, size_t bytes);

}  // namespace sieve::topo

#endif  // SIEVE_TOPO_MACHINE_H_
