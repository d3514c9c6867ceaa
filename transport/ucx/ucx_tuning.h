// UCX settings Sieve chooses for the links it runs on. Applied to the UCP
// config (ucp_config_modify) before ucp_init, and never over a UCX_* variable
// the user set. Pure logic (no UCX calls), so it is unit-tested.
#ifndef SIEVE_TRANSPORT_UCX_UCX_TUNING_H_
#define SIEVE_TRANSPORT_UCX_UCX_TUNING_H_

#include <cstddef>
#include <string>
#include <vector>

namespace sieve::transport {

struct UcxSetting {
  std::string name;   // the key ucp_config_modify takes: without the UCX_ prefix, and a
                      // transport's option without its prefix ("TX_SEG_SIZE" for TCP_)
  std::string value;
  std::string why;    // for the INFO line
  std::string variable;  // the environment variable a user sets instead ("UCX_TCP_TX_SEG_SIZE")
};

// True when UCX_TLS (as the user set it) allows TCP and nothing else that moves
// data between processes: no shared memory, no RDMA ("tcp", "tcp,self").
bool TlsIsTcpOnly(const std::string& ucx_tls);

// UCX's TCP fragment (send and receive copy-out buffer) where UCX may use TCP
// only: 256 KiB instead of 8 KiB (send) and 64 KiB (receive).
constexpr size_t kTcpFragmentBytes = 256 * 1024;

// The settings to apply for this UCX_TLS; `user_set` holds the UCX_* variables
// the user set (full names, "UCX_RNDV_THRESH"): those are left out.
// `largest_segment` is the largest message the pipelined algorithms send
// (SIEVE_SEGMENT_BYTES): messages up to twice that go eagerly over TCP, larger
// ones (big point-to-point sends) keep the rendezvous, so a receiver that has
// not posted yet never buffers more than that per message.
std::vector<UcxSetting> ChooseUcxSettings(const std::string& ucx_tls,
                                          const std::vector<std::string>& user_set,
                                          size_t largest_segment);

// TCP socket buffer bytes for a link of this round trip and rate: twice its
// bandwidth-delay product (the kernel counts its own overhead against the
// buffer, about half of it), at least 256 KiB, at most 256 MiB.
size_t TcpBufferBytes(double rtt_s, double rate_Bps);

// What the kernel lets a TCP socket's buffers grow to in this network namespace,
// per direction; 0 where unreadable.
struct TcpBufferLimits {
  size_t send_autotune = 0;  // tcp_wmem[2]: autotuning's ceiling for the send buffer
  size_t recv_autotune = 0;  // tcp_rmem[2]
  size_t send_set_max = 0;   // net.core.wmem_max: caps a size set with SO_SNDBUF
  size_t recv_set_max = 0;   // net.core.rmem_max
};
TcpBufferLimits ReadTcpBufferLimits();

// UCX_TCP_SNDBUF/RCVBUF for a long fat link, each direction on its own: where UCX
// may use TCP only, the link is known (rtt and rate > 0), the user did not set
// it, and the kernel's autotuning stops below TcpBufferBytes. A size set on a
// socket turns its autotuning off, is capped at net.core.[rw]mem_max and then
// doubled by the kernel (its overhead), so the request is half of
// TcpBufferBytes, capped there, and is made only where the buffer it gives
// (twice the request) beats autotuning's ceiling; unknown limits: nothing set.
// The names are the TCP transport's own ("SNDBUF"): UCX 1.13 ignores
// "TCP_SNDBUF" given to ucp_config_modify.
std::vector<UcxSetting> ChooseTcpBuffers(const std::string& ucx_tls,
                                         const std::vector<std::string>& user_set, double rtt_s,
                                         double rate_Bps, const TcpBufferLimits& limits);

}  // namespace sieve::transport

#endif  // SIEVE_TRANSPORT_UCX_UCX_TUNING_H_
