// Host id text: "<hostname>#<pid>".
#include "comm/host_id.h"

namespace sieve {

std::string MakeHostId(const std::string& hostname, int pid) {
  return hostname + "#" + std::to_string(pid);
}

HostId ParseHostId(const std::string& text) {
  HostId id;
  size_t hash = text.rfind('#');
  if (hash == std::string::npos) return id;
  id.host = text.substr(0, hash);
  // Leading decimal digits, as atoi read them, but without overflow: a pid is < 2^22 on Linux.
  long long pid = 0;
  for (size_t i = hash + 1; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i) {
    pid = pid * 10 + (text[i] - '0');
    if (pid > (1 << 30)) return id;
  }
  id.pid = static_cast<int>(pid);
  return id;
}

}  // namespace sieve
