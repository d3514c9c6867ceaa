// Where a rank's traffic goes: which NIC UCX should use (the one nearest the
// rank's GPU, else its CPUs) and which NUMA node its staging memory belongs on.
#ifndef SIEVE_TOPO_PLACEMENT_H_
#define SIEVE_TOPO_PLACEMENT_H_

#include <string>
#include <vector>

#include "topo/machine.h"
#include "topo/rdma.h"

namespace sieve::topo {

struct PlacementRequest {
  std::string forced_device;  // SIEVE_NET_DEVICE: taken as is
  bool user_chose = false;    // UCX_NET_DEVICES or SIEVE_SOCKET_IFNAME set: UCX decides
  std::string user_reason;    // which of them, for the log
  int local_rank = 0;         // spreads ranks over equally near NICs and over GPUs
};

struct Placement {
  std::string net_device;  // for UCX_NET_DEVICES ("mlx5_0:1", "eth0"); "": UCX's own choice
  int numa = -1;           // NUMA node of that NIC (else of the rank's GPU/CPUs); -1 unknown
  std::string reason;      // one line: why this NIC
};

// Active RDMA ports first (they carry UCX's fastest transports), then PCI
// network interfaces; among them the ones on the NUMA node of the rank's GPU
// (local_rank-th GPU) or of the CPUs it is bound to; ties split by local rank.
Placement ChoosePlacement(const Machine& machine, const std::vector<RdmaPort>& ports,
                          const PlacementRequest& request);

}  // namespace sieve::topo

#endif  // SIEVE_TOPO_PLACEMENT_H_
