#include "comm/cpu_isa_cap.h"

#include "core/log.h"

namespace sieve {

kernels::CpuIsa CpuIsaCapOf(CpuIsaParam param) {
  switch (param) {
    case CpuIsaParam::kAvx2:
      return kernels::CpuIsa::kAvx2;
    case CpuIsaParam::kPortable:
      return kernels::CpuIsa::kPortable;
    case CpuIsaParam::kAuto:
    case CpuIsaParam::kAvx512:
      break;
  }
  return kernels::CpuIsa::kAvx512;
}

void ApplyCpuIsa(const Config& config) {
  kernels::CapCpuIsa(CpuIsaCapOf(config.cpu_isa));
  SIEVE_INFO(kLogInit, "CPU kernels: %s (this CPU's best: %s; SIEVE_CPU_ISA=%s)",
             kernels::CpuIsaName(kernels::ActiveCpuIsa()),
             kernels::CpuIsaName(kernels::DetectedCpuIsa()), ParamText(config.cpu_isa));
}

}  // namespace sieve
