// RDMA devices and their ports as libibverbs reports them.
#ifndef SIEVE_TOPO_RDMA_H_
#define SIEVE_TOPO_RDMA_H_

#include <string>
#include <vector>

namespace sieve::topo {

struct RdmaPort {
  std::string device;  // "mlx5_0"
  int port = 1;
  std::string state;       // "ACTIVE", "DOWN", ...
  std::string link_layer;  // "InfiniBand", "Ethernet"
  double gbps = 0;         // active speed x width
  // UCX_NET_DEVICES name of the port: "mlx5_0:1".
  std::string UcxName() const { return device + ":" + std::to_string(port); }
};

// Every port of every device; empty on a machine without RDMA devices (or
// without a usable libibverbs provider). Never fails; *note says why empty.
std::vector<RdmaPort> ListRdmaPorts(std::string* note = nullptr);

// ibverbs rate encodings -> Gbit/s per lane and lane count (exposed for tests).
double RdmaLaneGbps(int active_speed);
int RdmaLanes(int active_width);

}  // namespace sieve::topo

#endif  // SIEVE_TOPO_RDMA_H_
