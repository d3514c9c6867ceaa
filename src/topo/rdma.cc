// libibverbs enumeration: device list, then ibv_query_port on each port.
#include "topo/rdma.h"

#include <infiniband/verbs.h>

#include "core/status.h"

namespace sieve::topo {

double RdmaLaneGbps(int active_speed) {
  switch (active_speed) {
    case 1:
      return 2.5;  // SDR
    case 2:
      return 5.0;  // DDR
    case 4:
    case 8:
      return 10.0;  // QDR, FDR10
    case 16:
      return 14.0;  // FDR
    case 32:
      return 25.0;  // EDR
    case 64:
      return 50.0;  // HDR
    case 128:
      return 100.0;  // NDR
    default:
      return 0;
  }
}

int RdmaLanes(int active_width) {
  switch (active_width) {
    case 1:
      return 1;
    case 2:
      return 4;
    case 4:
      return 8;
    case 8:
      return 12;
    case 16:
      return 2;
    default:
      return 0;
  }
}

std::vector<RdmaPort> ListRdmaPorts(std::string* note) {
  std::vector<RdmaPort> ports;
  int count = 0;
  ibv_device** list = ibv_get_device_list(&count);
  if (list == nullptr) {
    if (note != nullptr) *note = "no RDMA devices (libibverbs: no RDMA support on this machine)";
    return ports;
  }
  for (int i = 0; i < count; ++i) {
    ibv_context* ctx = ibv_open_device(list[i]);
    if (ctx == nullptr) continue;
    ibv_device_attr dev{};
    if (ibv_query_device(ctx, &dev) == 0) {
      for (int p = 1; p <= dev.phys_port_cnt; ++p) {
        ibv_port_attr attr{};
        if (ibv_query_port(ctx, static_cast<uint8_t>(p), &attr) != 0) continue;
        RdmaPort port;
        port.device = ibv_get_device_name(list[i]);
        port.port = p;
        port.state = ibv_port_state_str(attr.state);
        port.link_layer = attr.link_layer == IBV_LINK_LAYER_ETHERNET ? "Ethernet" : "InfiniBand";
        port.gbps = RdmaLaneGbps(attr.active_speed) * RdmaLanes(attr.active_width);
        ports.push_back(port);
      }
    }
    ibv_close_device(ctx);
  }
  ibv_free_device_list(list);
  if (note != nullptr)
    *note = ports.empty() ? "no RDMA devices (libibverbs lists none)"
                          : StrFormat("%zu RDMA port(s)", ports.size());
  return ports;
}

}  // namespace sieve::topo
