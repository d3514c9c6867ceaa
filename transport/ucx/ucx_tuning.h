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
  std::string name;   // without the UCX_ prefix, as ucp_config_modify takes it
  std::string value;
  std::string why;    // for the INFO line
};

// True when UCX_TLS (as the user set it) allows TCP and nothing else that moves
// data between processes: no shared memory, no RDMA ("tcp", "tcp,self").
bool TlsIsTcpOnly(const std::string& ucx_tls);

// The settings to apply for this UCX_TLS; `user_set` holds the UCX_* variables
// the user set (full names, "UCX_RNDV_THRESH"): those are left out.
// `largest_segment` is the largest message the pipelined algorithms send
// (SIEVE_SEGMENT_BYTES): messages up to twice that go eagerly over TCP, larger
// ones (big point-to-point sends) keep the rendezvous, so a receiver that has
// not posted yet never buffers more than that per message.
std::vector<UcxSetting> ChooseUcxSettings(const std::string& ucx_tls,
                                          const std::vector<std::string>& user_set,
                                          size_t largest_segment);

}  // namespace sieve::transport

#endif  // SIEVE_TRANSPORT_UCX_UCX_TUNING_H_
