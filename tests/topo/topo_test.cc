// Topology on this machine (hwloc, libibverbs: whatever is there must be
// reported sensibly; no RDMA and one NUMA node are normal), memory binding
// that never fails, the NIC choice on synthetic machines, host identities and
// host layouts.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "comm/host_layout.h"
#include "topo/host_id.h"
#include "topo/machine.h"
#include "topo/placement.h"
#include "topo/rdma.h"

namespace sieve::topo {
namespace {

bool Exists(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0;
}

TEST(Machine, ThisMachineIsReportedSensibly) {
  std::string note;
  const Machine& m = LoadMachine(&note);
  EXPECT_EQ(note, "");
  EXPECT_GE(m.cores, 1);
  EXPECT_GE(m.pus, m.cores);
  EXPECT_LE(m.pus, 1 << 16);
  EXPECT_GE(m.numa_nodes, 1);
  EXPECT_FALSE(m.my_cpus.empty());
  EXPECT_FALSE(m.my_numa.empty());
  for (int node : m.my_numa) EXPECT_LT(node, m.numa_nodes);
  if (m.numa_nodes > 1) {
    EXPECT_EQ(m.distances.size(), size_t(m.numa_nodes) * m.numa_nodes);
  }
  for (const Device& d : m.devices) {
    EXPECT_FALSE(d.name.empty());
    EXPECT_LT(d.numa, m.numa_nodes) << d.name;
    // A network device hwloc names is a real interface of this namespace.
    if (d.kind == Device::kNet) {
      EXPECT_TRUE(Exists("/sys/class/net/" + d.name)) << d.name;
    } else if (d.kind == Device::kRdma) {
      EXPECT_TRUE(Exists("/sys/class/infiniband/" + d.name)) << d.name;
    }
  }
  std::string summary = m.Summary();
  EXPECT_NE(summary.find("NUMA node"), std::string::npos) << summary;
  EXPECT_NE(summary.find(std::to_string(m.cores) + " cores"), std::string::npos) << summary;
  EXPECT_EQ(&LoadMachine(), &m);  // loaded once per process
}

TEST(Rdma, PortsMatchSysfs) {
  std::string note;
  std::vector<RdmaPort> ports = ListRdmaPorts(&note);
  EXPECT_FALSE(note.empty());
  if (!Exists("/sys/class/infiniband")) {
    EXPECT_TRUE(ports.empty());
    EXPECT_NE(note.find("no RDMA devices"), std::string::npos) << note;
  }
  for (const RdmaPort& p : ports) {
    EXPECT_TRUE(Exists("/sys/class/infiniband/" + p.device + "/ports/" + std::to_string(p.port)))
        << p.UcxName();
    EXPECT_FALSE(p.state.empty());
    EXPECT_TRUE(p.link_layer == "InfiniBand" || p.link_layer == "Ethernet") << p.link_layer;
    EXPECT_GE(p.gbps, 0);
  }
}

TEST(Rdma, RateEncodings) {
  EXPECT_EQ(RdmaLaneGbps(1) * RdmaLanes(2), 10.0);     // SDR 4x
  EXPECT_EQ(RdmaLaneGbps(32) * RdmaLanes(2), 100.0);   // EDR 4x
  EXPECT_EQ(RdmaLaneGbps(64) * RdmaLanes(2), 200.0);   // HDR 4x
  EXPECT_EQ(RdmaLaneGbps(128) * RdmaLanes(2), 400.0);  // NDR 4x
  EXPECT_EQ(RdmaLaneGbps(3), 0.0);
}

TEST(Bind, NeverFailsAndBindsOnlyWithSeveralNodes) {
  const Machine& m = LoadMachine();
  std::vector<char> buf(1 << 20, 1);
  bool bound = BindArea(buf.data(), buf.size(), 0);
  EXPECT_EQ(bound, m.numa_nodes > 1);
  EXPECT_FALSE(BindArea(nullptr, 4096, 0));
  EXPECT_FALSE(BindArea(buf.data(), 0, 0));
  EXPECT_FALSE(BindArea(buf.data(), buf.size(), -1));
  EXPECT_FALSE(BindArea(buf.data(), buf.size(), m.numa_nodes + 5));
  EXPECT_EQ(buf[12345], 1);  // the memory is untouched
}

TEST(BindThread, NodeZeroBindsOrIsSkippedAndAMissingNodeIsAnError) {
  const Machine& m = LoadMachine();
  // In a thread of its own: the test runner's affinity stays as it was.
  std::thread([&m] {
    bool bound = true;
    std::string what;
    sieve::Status st = BindThreadToNode(0, &bound, &what);
    ASSERT_TRUE(st.ok()) << st.ToString();
    EXPECT_FALSE(what.empty());
    if (m.numa_nodes < 2) {
      EXPECT_FALSE(bound);
      EXPECT_NE(what.find("one NUMA node"), std::string::npos) << what;
    } else if (bound) {
      EXPECT_NE(what.find("bound to NUMA node 0"), std::string::npos) << what;
    }
    for (int missing : {-1, std::max(m.numa_nodes, 1), m.numa_nodes + 5}) {
      bound = true;
      st = BindThreadToNode(missing, &bound, &what);
      EXPECT_EQ(st.code(), sieve::Code::kInvalidArgument) << missing;
      EXPECT_NE(st.message().find("does not exist"), std::string::npos) << st.message();
      EXPECT_FALSE(bound);
    }
  }).join();
}

TEST(MapOnNode, PlacesOnlyWithSeveralNodesAndSaysWhyNot) {
  const Machine& m = LoadMachine();
  std::string why;
  void* p = MapOnNode(10000, 0, &why);
  if (m.numa_nodes < 2) {
    EXPECT_EQ(p, nullptr);
    EXPECT_NE(why.find("one NUMA node"), std::string::npos) << why;
  } else {
    ASSERT_NE(p, nullptr) << why;
    static_cast<char*>(p)[9999] = 7;  // the whole (rounded) area is usable
    UnmapOnNode(p, 10000);
    EXPECT_EQ(MapOnNode(4096, m.numa_nodes, &why), nullptr);
  }
  UnmapOnNode(nullptr, 4096);  // a no-op
}

// Two NUMA nodes: eth0 + mlx5_0 on node 0, eth1 + mlx5_1 on node 1, a GPU on each.
Machine TwoNodes(bool gpus) {
  Machine m;
  m.numa_nodes = 2;
  m.cores = 8;
  m.pus = 16;
  m.devices = {{Device::kNet, "eth0", "0000:01:00.0", 0, "0-7"},
               {Device::kNet, "eth1", "0000:81:00.0", 1, "8-15"},
               {Device::kRdma, "mlx5_0", "0000:02:00.0", 0, "0-7"},
               {Device::kRdma, "mlx5_1", "0000:82:00.0", 1, "8-15"}};
  if (gpus) {
    m.devices.push_back({Device::kGpu, "cuda0", "0000:03:00.0", 0, "0-7"});
    m.devices.push_back({Device::kGpu, "cuda1", "0000:83:00.0", 1, "8-15"});
  }
  m.my_numa = {0, 1};
  return m;
}

RdmaPort Port(const char* dev, const char* state) {
  RdmaPort p;
  p.device = dev;
  p.state = state;
  p.link_layer = "InfiniBand";
  p.gbps = 200;
  return p;
}

TEST(Placement, NicNearestTheGpu) {
  Machine m = TwoNodes(true);
  std::vector<RdmaPort> ports = {Port("mlx5_0", "ACTIVE"), Port("mlx5_1", "ACTIVE")};
  PlacementRequest req;
  req.local_rank = 0;
  Placement p = ChoosePlacement(m, ports, req);
  EXPECT_EQ(p.net_device, "mlx5_0:1");
  EXPECT_EQ(p.numa, 0);
  req.local_rank = 1;
  p = ChoosePlacement(m, ports, req);
  EXPECT_EQ(p.net_device, "mlx5_1:1");
  EXPECT_EQ(p.numa, 1);
  EXPECT_NE(p.reason.find("cuda1"), std::string::npos) << p.reason;
}

TEST(Placement, DownPortsAreSkippedAndEthernetIsTheFallback) {
  Machine m = TwoNodes(true);
  PlacementRequest req;
  req.local_rank = 1;
  Placement p = ChoosePlacement(m, {Port("mlx5_0", "ACTIVE"), Port("mlx5_1", "DOWN")}, req);
  EXPECT_EQ(p.net_device, "mlx5_0:1");  // the only active port, though on the other node
  EXPECT_EQ(p.numa, 0);
  p = ChoosePlacement(m, {Port("mlx5_0", "DOWN")}, req);
  EXPECT_EQ(p.net_device, "eth1");
  EXPECT_EQ(p.numa, 1);
}

TEST(Placement, CpuBindingDecidesWithoutGpus) {
  Machine m = TwoNodes(false);
  m.my_numa = {1};
  PlacementRequest req;
  Placement p = ChoosePlacement(m, {}, req);
  EXPECT_EQ(p.net_device, "eth1");
  // Not bound to one node: ranks spread over the NICs by local rank.
  m.my_numa = {0, 1};
  req.local_rank = 3;
  p = ChoosePlacement(m, {}, req);
  EXPECT_EQ(p.net_device, "eth1");
}

TEST(Placement, TheUserDecides) {
  Machine m = TwoNodes(true);
  PlacementRequest req;
  req.user_chose = true;
  req.user_reason = "UCX_NET_DEVICES";
  Placement p = ChoosePlacement(m, {Port("mlx5_0", "ACTIVE")}, req);
  EXPECT_EQ(p.net_device, "");
  EXPECT_NE(p.reason.find("UCX_NET_DEVICES"), std::string::npos) << p.reason;
  req.forced_device = "mlx5_1:1";
  p = ChoosePlacement(m, {Port("mlx5_0", "ACTIVE")}, req);
  EXPECT_EQ(p.net_device, "mlx5_1:1");
}

TEST(Placement, NoNicLeavesUcxAlone) {
  Machine m;
  m.numa_nodes = 1;
  Placement p = ChoosePlacement(m, {}, PlacementRequest());
  EXPECT_EQ(p.net_device, "");
  EXPECT_FALSE(p.reason.empty());
}

TEST(HostId, OverrideAndDefault) {
  EXPECT_EQ(HostIdentity("rack7-node3"), "rack7-node3");
  std::string id = HostIdentity("");
  std::string boot;
  std::ifstream("/proc/sys/kernel/random/boot_id") >> boot;
  EXPECT_NE(id.find(boot), std::string::npos) << id;
  EXPECT_NE(id.find("/net:"), std::string::npos) << id;
  EXPECT_EQ(HostIdentity(""), id);  // stable
  EXPECT_NE(HostIdHash("a"), HostIdHash("b"));
  EXPECT_EQ(HostIdHash(id), HostIdHash(HostIdentity("")));
}

TEST(HostLayout, InterleavedHosts) {
  // Ranks 0..5 on hosts a b a b a b.
  HostLayout l = HostLayout::FromIds({7, 9, 7, 9, 7, 9});
  EXPECT_EQ(l.nhosts, 2);
  EXPECT_EQ(l.max_local, 3);
  EXPECT_TRUE(l.uniform);
  EXPECT_TRUE(l.Hierarchical());
  EXPECT_EQ(l.host, (std::vector<int>{0, 1, 0, 1, 0, 1}));
  EXPECT_EQ(l.local, (std::vector<int>{0, 0, 1, 1, 2, 2}));
  EXPECT_EQ(l.SameHost(3), (std::vector<int>{1, 3, 5}));
  EXPECT_EQ(l.SameLocalIndex(4), (std::vector<int>{4, 5}));
  EXPECT_EQ(l.Describe(), "2 hosts x 3 ranks");
}

TEST(HostLayout, ShapesThatAreNotHierarchical) {
  EXPECT_FALSE(HostLayout::FromIds({1, 1, 1, 1}).Hierarchical());  // one host
  EXPECT_FALSE(HostLayout::FromIds({1, 2, 3}).Hierarchical());     // one rank per host
  HostLayout uneven = HostLayout::FromIds({1, 1, 2});
  EXPECT_FALSE(uneven.uniform);
  EXPECT_FALSE(uneven.Hierarchical());
  EXPECT_EQ(uneven.Describe(), "2 hosts, 1 to 2 ranks each");
}

}  // namespace
}  // namespace sieve::topo
