// The bootstrap deadlines of a configuration (SIEVE_TIMEOUT, SIEVE_BOOTSTRAP_HANDSHAKE_TIMEOUT).
#ifndef SIEVE_COMM_BOOTSTRAP_CONFIG_H_
#define SIEVE_COMM_BOOTSTRAP_CONFIG_H_

#include "core/params.h"
#include "transport/bootstrap/bootstrap.h"

namespace sieve {

inline transport::BootstrapTimeouts BootstrapTimeoutsOf(const Config& config) {
  transport::BootstrapTimeouts t;
  t.job_s = config.timeout_s;
  t.handshake_s = config.bootstrap_handshake_s;
  return t;
}

}  // namespace sieve

#endif  // SIEVE_COMM_BOOTSTRAP_CONFIG_H_
