// The one place a communicator's transport is chosen: SIEVE_TRANSPORT names
// the implementation (UCX, or LOOPBACK for ranks as threads of one process),
// and SIEVE_FAULT's rules for this rank wrap it in the fault-injection
// decorator. Callers hold only the Transport interface.
#ifndef SIEVE_TRANSPORT_FACTORY_H_
#define SIEVE_TRANSPORT_FACTORY_H_

#include <memory>
#include <string>

#include "core/params.h"
#include "core/status.h"
#include "transport/transport.h"
#include "transport/ucx/ucx_options.h"

namespace sieve::transport {

struct TransportOptions {
  TransportParam kind = TransportParam::kUcx;  // SIEVE_TRANSPORT
  UcxOptions ucx;                              // used by UCX only
  std::string fault;                           // SIEVE_FAULT: "" for none
};

// A transport for `rank` of `size`, not yet connected (Transport::SetPeers).
Status CreateTransport(const TransportOptions& options, int rank, int size,
                       std::unique_ptr<Transport>* out);

}  // namespace sieve::transport

#endif  // SIEVE_TRANSPORT_FACTORY_H_
