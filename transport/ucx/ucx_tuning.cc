// Why these settings (measured with bench/sieve-bench, 4 ranks on tc-shaped
// links; numbers in docs/bench/README.md): over TCP, UCX's rendezvous costs
// every segment a request/reply exchange before its data moves, and dense
// all-reduce at 100 Mbit/s reached 87% of the link with it, 92% with segments
// sent eagerly. Over shared memory the opposite holds (rendezvous is a
// single-copy CMA read; eager sends cut 4-rank 64 MiB loopback bus bandwidth
// from 2.6 to 0.75 GB/s), so this applies only where TCP is all UCX may use.
#include "transport/ucx/ucx_tuning.h"

#include <algorithm>
#include <fstream>
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
       "UCX_TLS is TCP only: segments are sent eagerly, without a rendezvous exchange each",
       "UCX_RNDV_THRESH"},
      // Eager zero-copy over TCP trips an assertion in UCX 1.13 (uct_iface.h
      // "comp->count > 0", status ENDPOINT_TIMEOUT) when a peer dies mid-send
      // and the process aborts; copied (bcopy) eager sends fail cleanly.
      {"ZCOPY_THRESH", "inf",
       "UCX_TLS is TCP only: eager sends are copied, as UCX 1.13 aborts on a dead peer's zero-copy sends",
       "UCX_ZCOPY_THRESH"},
      // UCX's 8 KiB TCP send fragment costs one send() and one UCP fragment per
      // 8 KiB: at 10 Gbit/s, ranks sharing cores, that CPU bounded the all-reduce
      // (docs/bench/dense-10gbit.md). UCX 1.13 applies a transport's option given
      // to ucp_config_modify only under its name within the transport's table
      // ("TX_SEG_SIZE"; "TCP_TX_SEG_SIZE" is accepted and ignored).
      {"TX_SEG_SIZE", std::to_string(kTcpFragmentBytes),
       "UCX_TLS is TCP only: fewer, larger send() calls per segment", "UCX_TCP_TX_SEG_SIZE"},
      {"RX_SEG_SIZE", std::to_string(kTcpFragmentBytes),
       "UCX_TLS is TCP only: fewer, larger recv() calls per segment", "UCX_TCP_RX_SEG_SIZE"},
  };
  for (const UcxSetting& s : tcp_only) {
    if (std::find(user_set.begin(), user_set.end(), s.variable) == user_set.end())
      out.push_back(s);
  }
  return out;
}

size_t TcpBufferBytes(double rtt_s, double rate_Bps) {
  const double kMin = 256 << 10, kMax = 256 << 20;
  double want = 2.0 * rtt_s * rate_Bps;
  if (!(want > kMin)) return static_cast<size_t>(kMin);
  return static_cast<size_t>(want < kMax ? want : kMax);
}

std::vector<UcxSetting> ChooseTcpBuffers(const std::string& ucx_tls,
                                         const std::vector<std::string>& user_set, double rtt_s,
                                         double rate_Bps, size_t autotune_max) {
  std::vector<UcxSetting> out;
  if (!TlsIsTcpOnly(ucx_tls) || !(rtt_s > 0) || !(rate_Bps > 0)) return out;
  const size_t bytes = TcpBufferBytes(rtt_s, rate_Bps);
  if (autotune_max >= bytes) return out;
  std::ostringstream why;
  why << "TCP buffers for " << rtt_s * 1e3 << " ms x " << rate_Bps * 8e-9
      << " Gbit/s (SIEVE_LINK_RTT, SIEVE_LINK_RATE) beyond the kernel's autotuning ("
      << autotune_max << " bytes)";
  for (const char* name : {"TCP_SNDBUF", "TCP_RCVBUF"}) {
    const std::string variable = std::string("UCX_") + name;
    if (std::find(user_set.begin(), user_set.end(), variable) == user_set.end())
      out.push_back({name, std::to_string(bytes), why.str(), variable});
  }
  return out;
}

size_t TcpAutotuneMaxBytes() {
  size_t lowest = 0;
  for (const char* path : {"/proc/sys/net/ipv4/tcp_rmem", "/proc/sys/net/ipv4/tcp_wmem"}) {
    std::ifstream f(path);
    size_t lo = 0, def = 0, max = 0;
    if (!(f >> lo >> def >> max)) return 0;
    lowest = lowest == 0 ? max : std::min(lowest, max);
  }
  return lowest;
}

}  // namespace sieve::transport
