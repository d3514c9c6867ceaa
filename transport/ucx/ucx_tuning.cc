// Why these settings (measured with bench/sieve-bench, 4 ranks on tc-shaped
// links; numbers in docs/bench/README.md): over TCP, UCX's rendezvous costs
// every segment a request/reply exchange before its data moves, and dense
// all-reduce at 100 Mbit/s reached 87% of the link with it, 92% with segments
// sent eagerly. Over shared memory the opposite holds (rendezvous is a
// single-copy CMA read; eager sends cut 4-rank 64 MiB loopback bus bandwidth
// from 2.6 to 0.75 GB/s), so this applies only where TCP is all UCX may use.
#include "transport/ucx/ucx_tuning.h"

#include <algorithm>
#include <sstream>

namespace sieve::transport {

bool TlsIsTcpOnly(const std::string& ucx_tls) {
  if (ucx_tls.empty() || ucx_tls[0] == '^') return false;  // UCX's choice, or an exclusion list
  bool tcp = false;
  std::stringstream list(ucx_tls);
  std::string item;
  while (std::getline(list, item, ',')) {
    if (item == "tcp") {
      tcp = true;
    } else if (item != "self") {  // self: a rank to itself, in-process
      return false;
    }
  }
  return tcp;
}

std::vector<UcxSetting> ChooseUcxSettings(const std::string& ucx_tls,
                                          const std::vector<std::string>& user_set,
                                          size_t largest_segment) {
  std::vector<UcxSetting> out;
  if (!TlsIsTcpOnly(ucx_tls)) return out;
  const UcxSetting tcp_only[] = {
      {"RNDV_THRESH", std::to_string(2 * std::max<size_t>(largest_segment, 64 * 1024)),
       "UCX_TLS is TCP only: segments are sent eagerly, without a rendezvous exchange each"},
      // Eager zero-copy over TCP trips an assertion in UCX 1.13 (uct_iface.h
      // "comp->count > 0", status ENDPOINT_TIMEOUT) when a peer dies mid-send
      // and the process aborts; copied (bcopy) eager sends fail cleanly.
      {"ZCOPY_THRESH", "inf",
       "UCX_TLS is TCP only: eager sends are copied, as UCX 1.13 aborts on a dead peer's zero-copy sends"},
  };
  for (const UcxSetting& s : tcp_only) {
    if (std::find(user_set.begin(), user_set.end(), "UCX_" + s.name) == user_set.end())
      out.push_back(s);
  }
  return out;
}

}  // namespace sieve::transport
