#include "comm/cpu_isa_cap.h"

#include <string>

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

std::string ApplyCpuIsa(const Config& config) {
  kernels::CapCpuIsa(CpuIsaCapOf(config.cpu_isa));
  return std::string(kernels::CpuIsaName(kernels::ActiveCpuIsa())) +
         " (this CPU's best: " + kernels::CpuIsaName(kernels::DetectedCpuIsa()) +
         "; SIEVE_CPU_ISA=" + ParamText(config.cpu_isa) + ")";
}

}  // namespace sieve
