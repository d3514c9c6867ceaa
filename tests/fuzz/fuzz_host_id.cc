// Fuzzes the host id parser (a peer's "<hostname>#<pid>" from the bootstrap table, which decides
// shared-memory use and which pid is watched): never a negative or overflowed pid, and a valid
// id round-trips.
#include <string>

#include "comm/host_id.h"
#include "fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  sieve::HostId id = sieve::ParseHostId(text);
  FUZZ_CHECK(id.pid >= 0);
  size_t hash = text.rfind('#');
  FUZZ_CHECK(hash == std::string::npos ? id.host.empty() && id.pid == 0
                                       : id.host == text.substr(0, hash));
  if (id.pid > 0) {
    sieve::HostId again = sieve::ParseHostId(sieve::MakeHostId(id.host, id.pid));
    FUZZ_CHECK(again.host == id.host && again.pid == id.pid);
  }
  return 0;
}
