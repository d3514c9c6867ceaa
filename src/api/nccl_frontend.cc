// sieveCommServeNccl: what the NCCL shim learns from Sieve at init (the SIEVE_NCCL_MODE the
// registry read and validated) and the one INFO line saying Sieve serves NCCL calls.
#include <mutex>

#include "api/api_guard.h"
#include "api/arg_check.h"
#include "core/log.h"

using sieve::Comm;
using sieve::Status;

extern "C" sieveResult_t sieveCommServeNccl(sieveComm_t comm, const char** mode) {
  Comm* live = sieve::IdleImpl(comm);
  return sieve::Guard(live, "sieveCommServeNccl", [&]() -> Status {
    Comm* impl = nullptr;
    SIEVE_RETURN_IF_ERROR(sieve::CheckComm(comm, &impl));
    if (mode == nullptr) return Status::InvalidArgument("mode is NULL");
    *mode = sieve::ParamText(impl->config().nccl_mode);
    impl->MarkServingNccl();
    static std::once_flag logged;
    std::call_once(logged, [impl] {
      SIEVE_INFO(sieve::kLogInit, "Sieve serving NCCL calls (mode %s)",
                 sieve::ParamText(impl->config().nccl_mode));
    });
    return Status::OK();
  });
}
