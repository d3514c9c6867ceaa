// hwloc topology: loaded once, with I/O devices, then copied into plain data.
#include "topo/machine.h"

#include <hwloc.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <mutex>

namespace sieve::topo {

namespace {

hwloc_topology_t g_topology = nullptr;  // kept for BindArea; never destroyed
hwloc_bitmap_t g_process_cpus = nullptr;  // the process's affinity at load; never freed
Machine g_machine;
std::string g_note;

std::string CpuList(hwloc_const_bitmap_t set) {
  if (set == nullptr) return "";
  char* text = nullptr;
  if (hwloc_bitmap_list_asprintf(&text, set) < 0 || text == nullptr) return "";
  std::string out(text);
  std::free(text);
  return out;
}

// The NUMA node nearest an I/O object: the first node of its non-I/O ancestor.
int NumaOf(hwloc_topology_t topo, hwloc_obj_t obj) {
  hwloc_obj_t anc = hwloc_get_non_io_ancestor_obj(topo, obj);
  if (anc == nullptr || anc->nodeset == nullptr) return -1;
  hwloc_obj_t node =
      hwloc_get_next_obj_covering_cpuset_by_type(topo, anc->cpuset, HWLOC_OBJ_NUMANODE, nullptr);
  if (node == nullptr) {
    int first = hwloc_bitmap_first(anc->nodeset);
    node = first < 0 ? nullptr : hwloc_get_numanode_obj_by_os_index(topo, first);
  }
  return node == nullptr ? -1 : static_cast<int>(node->logical_index);
}

void Fill(hwloc_topology_t topo, Machine* m) {
  m->hwloc_version = HWLOC_VERSION;
  m->numa_nodes = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_NUMANODE);
  m->cores = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_CORE);
  m->pus = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PU);
  for (hwloc_obj_t os = nullptr; (os = hwloc_get_next_osdev(topo, os)) != nullptr;) {
    Device d;
    switch (os->attr->osdev.type) {
      case HWLOC_OBJ_OSDEV_NETWORK:
        d.kind = Device::kNet;
        break;
      case HWLOC_OBJ_OSDEV_OPENFABRICS:
        d.kind = Device::kRdma;
        break;
      case HWLOC_OBJ_OSDEV_GPU:
      case HWLOC_OBJ_OSDEV_COPROC:
        d.kind = Device::kGpu;
        break;
      default:
        continue;
    }
    d.name = os->name != nullptr ? os->name : "";
    hwloc_obj_t pci = os->parent;
    if (pci != nullptr && pci->type == HWLOC_OBJ_PCI_DEVICE) {
      char bus[32];
      std::snprintf(bus, sizeof(bus), "%04x:%02x:%02x.%01x", pci->attr->pcidev.domain,
                    pci->attr->pcidev.bus, pci->attr->pcidev.dev, pci->attr->pcidev.func);
      d.pci = bus;
    }
    d.numa = NumaOf(topo, os);
    hwloc_obj_t anc = hwloc_get_non_io_ancestor_obj(topo, os);
    d.cpus = anc != nullptr ? CpuList(anc->cpuset) : "";
    m->devices.push_back(d);
  }
  unsigned nr = 1;
  hwloc_distances_s* dist = nullptr;
  if (m->numa_nodes > 1 &&
      hwloc_distances_get_by_type(topo, HWLOC_OBJ_NUMANODE, &nr, &dist, 0, 0) == 0 && nr == 1) {
    if (dist->nbobjs == static_cast<unsigned>(m->numa_nodes))
      m->distances.assign(dist->values, dist->values + dist->nbobjs * dist->nbobjs);
    hwloc_distances_release(topo, dist);
  }
  hwloc_bitmap_t mine = hwloc_bitmap_alloc();
  if (hwloc_get_cpubind(topo, mine, HWLOC_CPUBIND_PROCESS) == 0) {
    m->my_cpus = CpuList(mine);
    for (int i = 0; i < m->numa_nodes; ++i) {
      hwloc_obj_t node = hwloc_get_obj_by_type(topo, HWLOC_OBJ_NUMANODE, i);
      if (node != nullptr && hwloc_bitmap_intersects(node->cpuset, mine)) m->my_numa.push_back(i);
    }
    g_process_cpus = mine;  // kept: threads are bound within it (BindThreadToNode)
  } else {
    hwloc_bitmap_free(mine);
  }
}

}  // namespace

const Machine& LoadMachine(std::string* note) {
  static std::once_flag once;
  std::call_once(once, [] {
    hwloc_topology_t topo = nullptr;
    if (hwloc_topology_init(&topo) != 0) {
      g_note = "hwloc_topology_init failed";
      return;
    }
    // PCI devices and their OS names (eth0, mlx5_0) without bridges and the rest.
    hwloc_topology_set_io_types_filter(topo, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
    if (hwloc_topology_load(topo) != 0) {
      g_note = "hwloc_topology_load failed";
      hwloc_topology_destroy(topo);
      return;
    }
    Fill(topo, &g_machine);
    g_topology = topo;
  });
  if (note != nullptr) *note = g_note;
  return g_machine;
}

bool BindArea(void* addr, size_t bytes, int numa) {
  const Machine& m = LoadMachine();
  if (g_topology == nullptr || m.numa_nodes < 2 || addr == nullptr || bytes == 0 || numa < 0)
    return false;
  hwloc_obj_t node = hwloc_get_obj_by_type(g_topology, HWLOC_OBJ_NUMANODE, numa);
  if (node == nullptr) return false;
  return hwloc_set_area_membind(g_topology, addr, bytes, node->nodeset, HWLOC_MEMBIND_BIND,
                                HWLOC_MEMBIND_BYNODESET) == 0;
}

Status BindThreadToNode(int numa, bool* bound, std::string* what) {
  *bound = false;
  const Machine& m = LoadMachine();
  const int nodes = m.numa_nodes > 0 ? m.numa_nodes : 1;  // hwloc failed: one node assumed
  if (numa < 0 || numa >= nodes)
    return Status::InvalidArgument(
        StrFormat("NUMA node %d does not exist (this machine has %d)", numa, nodes));
  if (g_topology == nullptr || m.numa_nodes < 2) {
    *what = "not bound (one NUMA node: nothing to choose)";
    return Status::OK();
  }
  hwloc_obj_t node = hwloc_get_obj_by_type(g_topology, HWLOC_OBJ_NUMANODE, numa);
  if (node == nullptr || node->cpuset == nullptr)
    return Status::Internal(StrFormat("hwloc has no CPU set for NUMA node %d", numa));
  hwloc_bitmap_t cpus = hwloc_bitmap_dup(node->cpuset);
  if (g_process_cpus != nullptr) hwloc_bitmap_and(cpus, cpus, g_process_cpus);
  const std::string list = CpuList(cpus);
  Status st;
  if (hwloc_bitmap_iszero(cpus)) {
    *what = StrFormat("not bound (none of this process's CPUs %s is on NUMA node %d)",
                      m.my_cpus.c_str(), numa);
  } else if (hwloc_set_cpubind(g_topology, cpus, HWLOC_CPUBIND_THREAD) != 0) {
    st = Status::SystemError(StrFormat("binding a thread to CPUs %s (NUMA node %d): %s",
                                       list.c_str(), numa, std::strerror(errno)));
  } else {
    *bound = true;
    *what = StrFormat("bound to NUMA node %d (CPUs %s)", numa, list.c_str());
  }
  hwloc_bitmap_free(cpus);
  return st;
}

void* MapOnNode(size_t bytes, int numa, std::string* why) {
  const Machine& m = LoadMachine();
  if (m.numa_nodes < 2 || g_topology == nullptr) {
    *why = "one NUMA node: nothing to choose";
    return nullptr;
  }
  if (numa < 0 || numa >= m.numa_nodes || bytes == 0) {
    *why = StrFormat("no NUMA node %d (this machine has %d)", numa, m.numa_nodes);
    return nullptr;
  }
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  const size_t rounded = (bytes + page - 1) / page * page;
  void* addr = mmap(nullptr, rounded, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (addr == MAP_FAILED) {
    *why = StrFormat("mmap of %zu bytes: %s", rounded, std::strerror(errno));
    return nullptr;
  }
  if (!BindArea(addr, rounded, numa)) {
    *why = StrFormat("binding memory to NUMA node %d: %s", numa, std::strerror(errno));
    munmap(addr, rounded);
    return nullptr;
  }
  return addr;
}

void UnmapOnNode(void* addr, size_t bytes) {
  if (addr == nullptr) return;
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  munmap(addr, (bytes + page - 1) / page * page);
}

std::string Machine::Summary() const {
  std::string out = StrFormat("%d NUMA node%s, %d cores, %d PUs", numa_nodes,
                              numa_nodes == 1 ? "" : "s", cores, pus);
  const char* kinds[] = {"NICs", "RDMA", "GPUs"};
  for (int k = 0; k < 3; ++k) {
    std::string list;
    for (const Device& d : devices)
      if (d.kind == k)
        list += StrFormat("%s%s (node %d%s%s)", list.empty() ? "" : ", ", d.name.c_str(), d.numa,
                          d.pci.empty() ? "" : ", pci ", d.pci.c_str());
    out += StrFormat("; %s %s", kinds[k], list.empty() ? "none" : list.c_str());
  }
  return out;
}

}  // namespace sieve::topo
