#include "support/two_hosts.h"

#include <fcntl.h>
#include <sched.h>
#include <sys/mount.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

namespace sieve_test {
namespace {

int Sh(const std::string& cmd) { return std::system((cmd + " >/dev/null 2>&1").c_str()); }

}  // namespace

TwoHosts::TwoHosts() {
  std::string id = std::to_string(getpid());
  ns_[0] = "fault-" + id + "-a";
  ns_[1] = "fault-" + id + "-b";
  if (geteuid() != 0) {
    skip_ = "needs root (network namespaces)";
    return;
  }
  std::string va = "fva" + id, vb = "fvb" + id;
  bool ok = Sh("ip netns add " + ns_[0]) == 0 && Sh("ip netns add " + ns_[1]) == 0 &&
            Sh("ip link add " + va + " type veth peer name " + vb) == 0 &&
            Sh("ip link set " + va + " netns " + ns_[0]) == 0 &&
            Sh("ip link set " + vb + " netns " + ns_[1]) == 0;
  for (int h = 0; ok && h < 2; ++h) {
    std::string in = "ip -n " + ns_[h] + " ";
    ok = Sh(in + "link set " + (h == 0 ? va : vb) + " name fv0") == 0 &&
         Sh(in + "addr add " + Addr(h) + "/24 dev fv0") == 0 &&
         Sh(in + "link set fv0 up") == 0 && Sh(in + "link set lo up") == 0;
  }
  if (!ok) skip_ = "cannot build network namespaces with iproute2 here";
}

TwoHosts::~TwoHosts() {
  Sh("ip netns del " + ns_[0]);
  Sh("ip netns del " + ns_[1]);
}

int TwoHosts::Enter(int rank) const {
  int h = HostOf(rank);
  int fd = open(("/var/run/netns/" + ns_[h]).c_str(), O_RDONLY);
  if (fd < 0 || setns(fd, CLONE_NEWNET) != 0 || unshare(CLONE_NEWUTS | CLONE_NEWNS) != 0)
    return 10;
  close(fd);
  // As `ip netns exec`: a private /sys so UCX lists this namespace's devices.
  if (mount("", "/", nullptr, MS_SLAVE | MS_REC, nullptr) != 0) return 12;
  umount2("/sys", MNT_DETACH);
  if (mount(ns_[h].c_str(), "/sys", "sysfs", 0, nullptr) != 0) return 13;
  std::string name = "fault-host-" + std::to_string(h);
  if (sethostname(name.c_str(), name.size()) != 0) return 11;
  return 0;
}

bool TwoHosts::Partition() const {
  return Sh("ip -n " + ns_[0] + " route add blackhole " + Addr(1) + "/32") == 0 &&
         Sh("ip -n " + ns_[1] + " route add blackhole " + Addr(0) + "/32") == 0;
}

long long TwoHosts::TxBytes(int h) const {
  std::string cmd = "ip netns exec " + ns_[h] + " cat /sys/class/net/fv0/statistics/tx_bytes";
  FILE* f = popen(cmd.c_str(), "r");
  if (f == nullptr) return -1;
  long long bytes = -1;
  if (std::fscanf(f, "%lld", &bytes) != 1) bytes = -1;
  pclose(f);
  return bytes;
}

bool TwoHosts::Shape(const char* rate) const {
  for (int h = 0; h < 2; ++h)
    if (Sh("ip netns exec " + ns_[h] + " tc qdisc replace dev fv0 root tbf rate " + rate +
           " burst 64kb latency 50ms") != 0)
      return false;
  return true;
}

RankSpec HostSpec(const TwoHosts& hosts, const char* timeout) {
  RankSpec spec;
  spec.nranks = 4;
  spec.kill_after_s = 60;
  spec.env = {{"SIEVE_TIMEOUT", timeout}, {"SIEVE_SOCKET_IFNAME", "fv0"},
              {"UCX_NET_DEVICES", "fv0"},   {"UCX_TLS", "tcp,self"},
              {"SIEVE_DEBUG", "INFO"},      {"SIEVE_DEBUG_SUBSYS", "NET"}};
  spec.setup = [&hosts](int rank) { return hosts.Enter(rank); };
  return spec;
}

}  // namespace sieve_test
