// Which vector instruction set the CPU kernels may use, probed once at run time
// (the library is built for baseline x86-64; wide paths carry target attributes).
// Every wide path is bit-identical to the portable one; tests pin each in turn.
#ifndef SIEVE_KERNELS_CPU_ISA_H_
#define SIEVE_KERNELS_CPU_ISA_H_

namespace sieve::kernels {

// Ordered: each level implies the ones below it.
enum class CpuIsa : int {
  kPortable = 0,  // plain C++ (whatever the compiler makes of it)
  kAvx2 = 1,      // AVX2 with F16C, POPCNT and PCLMULQDQ (every AVX2 CPU has them)
  kAvx512 = 2,    // AVX-512 F, BW, VL, VBMI (byte permutes) and VBMI2 (expand of every
                  // element width), and BMI2 (bit deposit)
};

// The level kernels use: the best the CPU has, capped by CapCpuIsa.
CpuIsa ActiveCpuIsa();
// The best level this CPU supports.
CpuIsa DetectedCpuIsa();
// Caps ActiveCpuIsa, process-wide: SIEVE_CPU_ISA (each communicator created applies it),
// tests that compare every path against the references, the kernel benchmarks. Safe at
// any time: every level gives the same bits, and a kernel call reads the cap once.
void CapCpuIsa(CpuIsa limit);
// "AVX-512", "AVX2", "portable": for messages.
const char* CpuIsaName(CpuIsa isa);

}  // namespace sieve::kernels

#endif  // SIEVE_KERNELS_CPU_ISA_H_
