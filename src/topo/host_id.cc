// Host identity from hostname, kernel boot id and network-namespace inode.
#include "topo/host_id.h"

#include <sys/stat.h>
#include <unistd.h>

#include <fstream>

namespace sieve::topo {

std::string HostIdentity(const std::string& override_id) {
  if (!override_id.empty()) return override_id;
  char host[256] = {};
  gethostname(host, sizeof(host) - 1);
  std::string boot_id;
  std::ifstream("/proc/sys/kernel/random/boot_id") >> boot_id;
  struct stat ns {};
  unsigned long long netns = stat("/proc/self/ns/net", &ns) == 0 ? ns.st_ino : 0;
  return std::string(host) + "/" + boot_id + "/net:" + std::to_string(netns);
}

uint64_t HostIdHash(const std::string& identity) {
  uint64_t h = 14695981039346656037ull;
  for (unsigned char c : identity) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

}  // namespace sieve::topo
