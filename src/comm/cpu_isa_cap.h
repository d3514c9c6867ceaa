// SIEVE_CPU_ISA: the cap on the CPU kernels' instruction set, applied process-wide when
// a communicator is created (the kernels have no communicator).
#ifndef SIEVE_COMM_CPU_ISA_CAP_H_
#define SIEVE_COMM_CPU_ISA_CAP_H_

#include <string>

#include "core/params.h"
#include "kernels/cpu_isa.h"

namespace sieve {

// The level SIEVE_CPU_ISA allows at most (AUTO: AVX-512, no cap).
kernels::CpuIsa CpuIsaCapOf(CpuIsaParam param);

// Caps the kernels at config.cpu_isa and says which level runs, for one line of text:
// "AVX2 (this CPU's best: AVX-512; SIEVE_CPU_ISA=AVX2)".
std::string ApplyCpuIsa(const Config& config);

}  // namespace sieve

#endif  // SIEVE_COMM_CPU_ISA_CAP_H_
