// The host id each rank publishes through the bootstrap ("<hostname>#<pid>") and its parser:
// ranks on one host find each other by name and watch each other's pid. Pure, so it is fuzzed.
#ifndef SIEVE_COMM_HOST_ID_H_
#define SIEVE_COMM_HOST_ID_H_

#include <string>

namespace sieve {

std::string MakeHostId(const std::string& hostname, int pid);

struct HostId {
  std::string host;  // text before the last '#' ("" when there is none)
  int pid = 0;       // the decimal pid after it; 0 when absent, malformed or out of range
};
// Never fails: a peer's malformed id only means "no pid to watch" (and no host match).
HostId ParseHostId(const std::string& text);

}  // namespace sieve

#endif  // SIEVE_COMM_HOST_ID_H_
