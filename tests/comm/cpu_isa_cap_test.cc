// SIEVE_CPU_ISA: the cap each communicator applies to the CPU kernels' instruction set.
#include "comm/cpu_isa_cap.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "kernels/cpu_isa.h"
#include "sieve.h"
#include "support/scoped_env.h"

namespace sieve {
namespace {

using kernels::CpuIsa;

TEST(CpuIsaCap, EveryValueCapsAtItsLevel) {
  EXPECT_EQ(CpuIsaCapOf(CpuIsaParam::kAuto), CpuIsa::kAvx512);
  EXPECT_EQ(CpuIsaCapOf(CpuIsaParam::kAvx512), CpuIsa::kAvx512);
  EXPECT_EQ(CpuIsaCapOf(CpuIsaParam::kAvx2), CpuIsa::kAvx2);
  EXPECT_EQ(CpuIsaCapOf(CpuIsaParam::kPortable), CpuIsa::kPortable);
}

// The level the kernels run at under `param` on this CPU: a CPU without the named level
// runs its best below it.
CpuIsa Under(CpuIsaParam param) { return std::min(kernels::DetectedCpuIsa(), CpuIsaCapOf(param)); }

// A one-rank communicator created under each value leaves the kernels at that level.
TEST(CpuIsaCap, ACommunicatorAppliesIt) {
  const struct {
    const char* value;
    CpuIsaParam param;
  } cases[] = {{"portable", CpuIsaParam::kPortable},
               {"AVX2", CpuIsaParam::kAvx2},
               {"AUTO", CpuIsaParam::kAuto}};
  for (const auto& c : cases) {
    SCOPED_TRACE(c.value);
    sieve::testing::ScopedEnv env("SIEVE_CPU_ISA", c.value);
    kernels::CapCpuIsa(c.param == CpuIsaParam::kPortable ? CpuIsa::kAvx512 : CpuIsa::kPortable);
    sieveUniqueId id;
    ASSERT_EQ(sieveGetUniqueId(&id), sieveSuccess);
    sieveComm_t comm = nullptr;
    ASSERT_EQ(sieveCommInitRank(&comm, 1, id, 0), sieveSuccess);
    EXPECT_EQ(kernels::ActiveCpuIsa(), Under(c.param));
    EXPECT_EQ(sieveCommDestroy(comm), sieveSuccess);
  }
  kernels::CapCpuIsa(CpuIsa::kAvx512);
}

TEST(CpuIsaCap, ABadValueFailsInitNamingTheVariable) {
  sieve::testing::ScopedEnv env("SIEVE_CPU_ISA", "sse4");
  sieveUniqueId id{};
  sieveComm_t comm = nullptr;
  EXPECT_NE(sieveGetUniqueId(&id), sieveSuccess);
  EXPECT_EQ(sieveCommInitRank(&comm, 1, id, 0), sieveInvalidArgument);
  EXPECT_EQ(comm, nullptr);
  EXPECT_NE(std::string(sieveGetLastError(nullptr)).find("SIEVE_CPU_ISA"), std::string::npos)
      << sieveGetLastError(nullptr);
}

}  // namespace
}  // namespace sieve
