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
                                         double rate_Bps, const TcpBufferLimits& limits) {
  std::vector<UcxSetting> out;
  if (!TlsIsTcpOnly(ucx_tls) || !(rtt_s > 0) || !(rate_Bps > 0)) return out;
  const size_t want = TcpBufferBytes(rtt_s, rate_Bps);
  struct Direction {
    const char* name;
    size_t autotune, set_max;
  };
  for (const Direction& d : {Direction{"SNDBUF", limits.send_autotune, limits.send_set_max},
                             Direction{"RCVBUF", limits.recv_autotune, limits.recv_set_max}}) {
    const std::string variable = std::string("UCX_TCP_") + d.name;
    if (std::find(user_set.begin(), user_set.end(), variable) != user_set.end()) continue;
    if (d.autotune == 0 || d.set_max == 0 || d.autotune >= want) continue;
    const size_t request = std::min((want + 1) / 2, d.set_max);
    if (2 * request <= d.autotune) continue;  // setting it would only cap the buffer
    std::ostringstream why;
    why << "a " << 2 * request << "-byte socket buffer for " << rtt_s * 1e3 << " ms x "
        << rate_Bps * 8e-9 << " Gbit/s (SIEVE_LINK_RTT, SIEVE_LINK_RATE; " << want
        << " wanted) beyond the kernel's autotuning (" << d.autotune << " bytes)";
    out.push_back({d.name, std::to_string(request), why.str(), variable});
  }
  return out;
}

namespace {
// The number at `index` (0-based) of a /proc/sys file, 0 when unreadable.
size_t ReadProcNumber(const char* path, int index) {
  std::ifstream f(path);
  size_t v = 0;
  for (int i = 0; i <= index; ++i)
    if (!(f >> v)) return 0;
  return v;
}
}  // namespace

TcpBufferLimits ReadTcpBufferLimits() {
  TcpBufferLimits l;
  l.send_autotune = ReadProcNumber("/proc/sys/net/ipv4/tcp_wmem", 2);
  l.recv_autotune = ReadProcNumber("/proc/sys/net/ipv4/tcp_rmem", 2);
  l.send_set_max = ReadProcNumber("/proc/sys/net/core/wmem_max", 0);
  l.recv_set_max = ReadProcNumber("/proc/sys/net/core/rmem_max", 0);
  return l;
}

}  // namespace sieve::transport
