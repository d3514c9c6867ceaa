// What the UCX transport is created with: plain data, so the factory's
// callers fill it in without seeing the UCX transport itself.
#ifndef SIEVE_TRANSPORT_UCX_UCX_OPTIONS_H_
#define SIEVE_TRANSPORT_UCX_UCX_OPTIONS_H_

#include <cstddef>
#include <string>
#include <vector>

#include "core/params.h"

namespace sieve::transport {

struct UcxOptions {
  // NICs UCX may use (UCX_NET_DEVICES syntax); empty: UCX's own choice.
  std::string net_devices;
  // What the user told UCX, for Sieve's own UCX settings (ucx_tuning.h): the
  // UCX_TLS value, the UCX_* variables set (never overridden), and the
  // largest pipelined message (SIEVE_SEGMENT_BYTES).
  std::string tls;
  std::vector<std::string> user_set;
  size_t largest_segment = 512 * 1024;
  // SIEVE_UCX_PEER_ERRORS: kPeer asks UCX to report failures on every
  // endpoint (it then avoids shared memory), kNone never, kAuto only for
  // other hosts (same-host peers are watched by pid).
  PeerErrorsParam peer_errors = PeerErrorsParam::kAuto;
  // The link as the user stated it (SIEVE_LINK_RTT, SIEVE_LINK_RATE; 0: unknown),
  // for TCP socket buffers that cover its bandwidth-delay product.
  double link_rtt_s = 0;
  double link_rate_Bps = 0;
};

}  // namespace sieve::transport

#endif  // SIEVE_TRANSPORT_UCX_UCX_OPTIONS_H_
