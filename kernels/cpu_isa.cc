// CPU feature probe through the compiler's cpuid builtins, cached on first use.
#include "kernels/cpu_isa.h"

#include <atomic>

#if defined(__x86_64__) && !defined(__CUDACC__)
#include <cpuid.h>
#endif

namespace sieve::kernels {

namespace {

std::atomic<int> g_limit{static_cast<int>(CpuIsa::kAvx512)};

#if defined(__x86_64__) && !defined(__CUDACC__)
// CPUID leaf 1, ECX bit 29: clang before 15 has no "f16c" for __builtin_cpu_supports.
bool HasF16c() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  return __get_cpuid(1, &eax, &ebx, &ecx, &edx) != 0 && (ecx & bit_F16C) != 0;
}
#endif

CpuIsa Probe() {
#if defined(__x86_64__) && !defined(__CUDACC__)
  __builtin_cpu_init();
  const bool avx2 = __builtin_cpu_supports("avx2") && HasF16c() &&
                    __builtin_cpu_supports("popcnt") && __builtin_cpu_supports("pclmul");
  if (avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vbmi") &&
      __builtin_cpu_supports("avx512vbmi2") && __builtin_cpu_supports("bmi2"))
    return CpuIsa::kAvx512;
  if (avx2) return CpuIsa::kAvx2;
#endif
  return CpuIsa::kPortable;
}

}  // namespace

CpuIsa DetectedCpuIsa() {
  static const CpuIsa detected = Probe();
  return detected;
}

CpuIsa ActiveCpuIsa() {
  int limit = g_limit.load(std::memory_order_relaxed);
  int have = static_cast<int>(DetectedCpuIsa());
  return static_cast<CpuIsa>(have < limit ? have : limit);
}

void CapCpuIsa(CpuIsa limit) { g_limit.store(static_cast<int>(limit), std::memory_order_relaxed); }

const char* CpuIsaName(CpuIsa isa) {
  switch (isa) {
    case CpuIsa::kAvx512:
      return "AVX-512";
    case CpuIsa::kAvx2:
      return "AVX2";
    case CpuIsa::kPortable:
      break;
  }
  return "portable";
}

}  // namespace sieve::kernels
