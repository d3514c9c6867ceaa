// sieve-info: what this machine and this build offer Sieve, and what each
// local rank would use. Starts no communicator and talks to no peer.
//
//   sieve-info [-n LOCAL_RANKS]
//
// Prints the version and build options, UCX's version, transports and memory
// types, the hwloc summary (NUMA distances, devices), the RDMA ports, this
// host's identity, for each of LOCAL_RANKS local ranks (default: one per GPU,
// at least 1) the NIC and UCX transports it would use, and every SIEVE_*
// parameter with its value.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "comm/cpu_isa_cap.h"
#include "core/params.h"
#include "sieve.h"
#include "topo/host_id.h"
#include "topo/machine.h"
#include "topo/placement.h"
#include "topo/rdma.h"
#include "transport/ucx/ucx_transport.h"

namespace {

using sieve::topo::Device;

std::string Join(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& s : items) out += (out.empty() ? "" : ", ") + s;
  return out.empty() ? "none" : out;
}

void PrintMachine(const sieve::topo::Machine& m, const std::string& note) {
  std::printf("\nTopology (hwloc %s)\n  %s\n", m.hwloc_version.c_str(), m.Summary().c_str());
  if (!note.empty()) std::printf("  note: %s\n", note.c_str());
  if (!m.distances.empty()) {
    std::printf("  NUMA distances:\n");
    for (int i = 0; i < m.numa_nodes; ++i) {
      std::printf("    node %d:", i);
      for (int j = 0; j < m.numa_nodes; ++j)
        std::printf(" %4lu", m.distances[static_cast<size_t>(i) * m.numa_nodes + j]);
      std::printf("\n");
    }
  }
  for (const Device& d : m.devices)
    std::printf("  %-5s %-12s pci %-13s NUMA node %d, CPUs %s\n",
                d.kind == Device::kNet    ? "net"
                : d.kind == Device::kRdma ? "rdma"
                                          : "gpu",
                d.name.c_str(), d.pci.empty() ? "-" : d.pci.c_str(), d.numa,
                d.cpus.empty() ? "?" : d.cpus.c_str());
  std::string nodes;
  for (int n : m.my_numa) nodes += (nodes.empty() ? "" : ",") + std::to_string(n);
  std::printf("  this process: CPUs %s, NUMA node(s) %s\n", m.my_cpus.c_str(),
              nodes.empty() ? "?" : nodes.c_str());
}

void PrintRdma(const std::vector<sieve::topo::RdmaPort>& ports, const std::string& note) {
  std::printf("\nRDMA devices (libibverbs)\n");
  if (ports.empty()) std::printf("  %s\n", note.c_str());
  for (const sieve::topo::RdmaPort& p : ports)
    std::printf("  %s port %d: %s, %s, %.0f Gbit/s\n", p.device.c_str(), p.port, p.state.c_str(),
                p.link_layer.c_str(), p.gbps);
}

}  // namespace

int main(int argc, char** argv) {
  int local_ranks = 0;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "-n") == 0 && i + 1 < argc) {
      local_ranks = std::atoi(argv[++i]);
      if (local_ranks < 1 || local_ranks > 4096) {
        std::fprintf(stderr, "sieve-info: -n wants a count of local ranks (1..4096)\n");
        return 2;
      }
    } else {
      std::fprintf(stderr, "usage: sieve-info [-n LOCAL_RANKS]\n");
      return std::strcmp(argv[i], "-h") == 0 || std::strcmp(argv[i], "--help") == 0 ? 0 : 2;
    }
  }
  sieve::Config config;
  sieve::Status st = sieve::LoadConfig(&config);
  if (!st.ok()) {
    std::fprintf(stderr, "sieve-info: %s\n", st.ToString().c_str());
    return 1;
  }
  std::printf("Sieve %d.%d.%d (build: %s, CUDA kernels %s)\n", SIEVE_MAJOR, SIEVE_MINOR,
              SIEVE_PATCH, SIEVE_INFO_BUILD_TYPE, SIEVE_INFO_WITH_CUDA ? "on" : "off");
  std::printf("CPU kernels: %s\n", sieve::ApplyCpuIsa(config).c_str());

  sieve::transport::UcxInfo ucx;
  st = sieve::transport::UcxTransport::Query({}, &ucx);
  if (st.ok()) {
    std::printf("\nUCX %s\n  transports: %s\n  memory types: %s\n", ucx.version.c_str(),
                Join(ucx.resources).c_str(), Join(ucx.memory_types).c_str());
  } else {
    std::printf("\nUCX: cannot open a context: %s\n", st.ToString().c_str());
  }

  std::string hwloc_note, rdma_note;
  const sieve::topo::Machine& machine = sieve::topo::LoadMachine(&hwloc_note);
  PrintMachine(machine, hwloc_note);
  std::vector<sieve::topo::RdmaPort> ports = sieve::topo::ListRdmaPorts(&rdma_note);
  PrintRdma(ports, rdma_note);

  std::string identity = sieve::topo::HostIdentity(config.host_id);
  std::printf("\nHost identity: %s (hash %016llx)\n", identity.c_str(),
              static_cast<unsigned long long>(sieve::topo::HostIdHash(identity)));

  if (local_ranks == 0) {
    for (const Device& d : machine.devices) local_ranks += d.kind == Device::kGpu;
    if (local_ranks == 0) local_ranks = 1;
  }
  sieve::ForeignEnv foreign = sieve::ReadForeignEnv();
  std::printf("\nWhat each local rank would use (%d)\n", local_ranks);
  for (int r = 0; r < local_ranks; ++r) {
    sieve::topo::PlacementRequest req;
    req.forced_device = config.net_device;
    req.user_chose = foreign.ucx_net_devices_set || !config.socket_ifname.empty();
    req.user_reason = foreign.ucx_net_devices_set ? "UCX_NET_DEVICES" : "SIEVE_SOCKET_IFNAME";
    req.local_rank = r;
    sieve::topo::Placement p = sieve::topo::ChoosePlacement(machine, ports, req);
    sieve::transport::UcxOptions options;
    options.net_devices = p.net_device;
    sieve::transport::UcxInfo mine;
    sieve::Status q = sieve::transport::UcxTransport::Query(options, &mine);
    std::printf("  local rank %d: NIC %s (%s)\n    UCX transports: %s\n", r,
                p.net_device.empty() ? "UCX's choice" : p.net_device.c_str(), p.reason.c_str(),
                q.ok() ? Join(mine.resources).c_str() : q.ToString().c_str());
    std::string bind = machine.numa_nodes < 2  ? "not bound (one NUMA node)"
                       : config.bind == sieve::BindParam::kNone ? "not bound (SIEVE_BIND=NONE)"
                       : p.numa < 0            ? "not bound (no NUMA node nearest the NIC)"
                                               : "NUMA node " + std::to_string(p.numa);
    // The same node for all three (src/mask, src/gpu): the progress thread's
    // CPUs are that node's within this process's own affinity.
    std::printf("    mask work buffers, GPU progress thread and pinned staging: %s\n",
                bind.c_str());
  }

  std::printf("\nParameters\n%s", sieve::DumpConfig(config).c_str());
  return 0;
}
