// CreateTransport: the implementation by name, the fault decorator by rules.
#include "transport/factory.h"

#include <vector>

#include "transport/fault_transport.h"
#include "transport/loopback/loopback_transport.h"
#include "transport/ucx/ucx_transport.h"

namespace sieve::transport {

Status CreateTransport(const TransportOptions& options, int rank, int size,
                       std::unique_ptr<Transport>* out) {
  std::unique_ptr<Transport> transport;
  switch (options.kind) {
    case TransportParam::kUcx: {
      std::unique_ptr<UcxTransport> ucx;
      SIEVE_RETURN_IF_ERROR(UcxTransport::Create(rank, size, options.ucx, &ucx));
      transport = std::move(ucx);
      break;
    }
    case TransportParam::kLoopback:
      SIEVE_RETURN_IF_ERROR(LoopbackTransport::Create(rank, size, &transport));
      break;
  }
  if (!options.fault.empty()) {
    std::vector<FaultRule> rules;
    SIEVE_RETURN_IF_ERROR(ParseFaultRules(options.fault, rank, &rules));
    if (!rules.empty())
      transport = std::make_unique<FaultTransport>(std::move(transport), std::move(rules));
  }
  *out = std::move(transport);
  return Status::OK();
}

}  // namespace sieve::transport
