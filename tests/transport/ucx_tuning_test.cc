// Sieve's own UCX settings: only where UCX is limited to TCP, never over a
// variable the user set.
#include "transport/ucx/ucx_tuning.h"

#include <gtest/gtest.h>

namespace sieve::transport {
namespace {

TEST(UcxTuningTest, TcpOnlyLists) {
  EXPECT_TRUE(TlsIsTcpOnly("tcp"));
  EXPECT_TRUE(TlsIsTcpOnly("tcp,self"));
  EXPECT_TRUE(TlsIsTcpOnly("self,tcp"));
  EXPECT_FALSE(TlsIsTcpOnly(""));         // UCX's choice: shared memory too
  EXPECT_FALSE(TlsIsTcpOnly("all"));
  EXPECT_FALSE(TlsIsTcpOnly("self"));
  EXPECT_FALSE(TlsIsTcpOnly("tcp,sm"));
  EXPECT_FALSE(TlsIsTcpOnly("tcp,posix,cma"));
  EXPECT_FALSE(TlsIsTcpOnly("rc,tcp"));
  EXPECT_FALSE(TlsIsTcpOnly("^sm"));      // an exclusion list leaves the rest to UCX
}

TEST(UcxTuningTest, TcpOnlySendsSegmentsEagerly) {
  auto settings = ChooseUcxSettings("tcp", {"UCX_TLS", "UCX_NET_DEVICES"}, 512 * 1024);
  ASSERT_EQ(settings.size(), 2u);
  EXPECT_EQ(settings[0].name, "RNDV_THRESH");
  EXPECT_EQ(settings[0].value, "1048576");  // twice the segment: headers fit, big sends keep rendezvous
  EXPECT_FALSE(settings[0].why.empty());
  EXPECT_EQ(settings[1].name, "ZCOPY_THRESH");  // copied eager sends: a dead peer fails cleanly
  EXPECT_EQ(settings[1].value, "inf");
  EXPECT_EQ(ChooseUcxSettings("tcp", {}, 4 << 20)[0].value, std::to_string(8 << 20));
}

TEST(UcxTuningTest, NothingWhereSharedMemoryOrRdmaMayBeUsed) {
  EXPECT_TRUE(ChooseUcxSettings("", {}, 512 * 1024).empty());
  EXPECT_TRUE(ChooseUcxSettings("posix,cma,tcp", {}, 512 * 1024).empty());
  EXPECT_TRUE(ChooseUcxSettings("rc_x,tcp", {}, 512 * 1024).empty());
}

TEST(UcxTuningTest, NeverOverridesTheUser) {
  auto settings = ChooseUcxSettings("tcp", {"UCX_TLS", "UCX_RNDV_THRESH"}, 512 * 1024);
  ASSERT_EQ(settings.size(), 1u);
  EXPECT_EQ(settings[0].name, "ZCOPY_THRESH");
  EXPECT_TRUE(ChooseUcxSettings("tcp", {"UCX_RNDV_THRESH", "UCX_ZCOPY_THRESH"}, 512 * 1024).empty());
}

}  // namespace
}  // namespace sieve::transport
