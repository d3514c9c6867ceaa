// NIC choice by NUMA proximity.
#include "topo/placement.h"

#include "core/status.h"

namespace sieve::topo {

namespace {

struct Candidate {
  std::string ucx_name;
  int numa = -1;
};

int NumaOfDevice(const Machine& m, Device::Kind kind, const std::string& name) {
  for (const Device& d : m.devices)
    if (d.kind == kind && d.name == name) return d.numa;
  return -1;
}

}  // namespace

Placement ChoosePlacement(const Machine& m, const std::vector<RdmaPort>& ports,
                          const PlacementRequest& req) {
  Placement p;
  // The anchor: the NUMA node of this rank's GPU, else of its CPUs when they sit on one node.
  std::vector<const Device*> gpus;
  for (const Device& d : m.devices)
    if (d.kind == Device::kGpu) gpus.push_back(&d);
  int anchor = -1;
  std::string anchor_text = "its CPUs";
  if (!gpus.empty()) {
    const Device* gpu = gpus[static_cast<size_t>(req.local_rank) % gpus.size()];
    anchor = gpu->numa;
    anchor_text = "GPU " + gpu->name;
  } else if (m.my_numa.size() == 1) {
    anchor = m.my_numa[0];
  }
  p.numa = anchor;
  if (!req.forced_device.empty()) {
    p.net_device = req.forced_device;
    p.reason = "SIEVE_NET_DEVICE";
    return p;
  }
  if (req.user_chose) {
    p.reason = req.user_reason + " is set: UCX chooses among what it allows";
    return p;
  }
  std::vector<Candidate> all;
  for (const RdmaPort& port : ports)
    if (port.state == "ACTIVE")
      all.push_back({port.UcxName(), NumaOfDevice(m, Device::kRdma, port.device)});
  const char* kind = "active RDMA port";
  if (all.empty()) {
    kind = "PCI network interface";
    for (const Device& d : m.devices)
      if (d.kind == Device::kNet && !d.pci.empty()) all.push_back({d.name, d.numa});
  }
  if (all.empty()) {
    p.reason = "no active RDMA port or PCI network interface found: UCX's own choice";
    return p;
  }
  std::vector<Candidate> near;
  for (const Candidate& c : all)
    if (anchor >= 0 && c.numa == anchor) near.push_back(c);
  const bool by_numa = !near.empty();
  if (!by_numa) near = all;
  const Candidate& pick = near[static_cast<size_t>(req.local_rank) % near.size()];
  p.net_device = pick.ucx_name;
  if (pick.numa >= 0) p.numa = pick.numa;
  p.reason = by_numa ? StrFormat("%s on NUMA node %d, nearest %s (local rank %d; %zu such)", kind,
                                 anchor, anchor_text.c_str(), req.local_rank, near.size())
                     : StrFormat("%s, none on %s's NUMA node; by local rank %d of %zu", kind,
                                 anchor_text.c_str(), req.local_rank, near.size());
  return p;
}

}  // namespace sieve::topo
