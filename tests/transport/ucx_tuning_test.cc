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
  ASSERT_EQ(settings.size(), 4u);
  EXPECT_EQ(settings[0].name, "RNDV_THRESH");
  EXPECT_EQ(settings[0].value, "1048576");  // twice the segment: headers fit, big sends keep rendezvous
  EXPECT_FALSE(settings[0].why.empty());
  EXPECT_EQ(settings[1].name, "ZCOPY_THRESH");  // copied eager sends: a dead peer fails cleanly
  EXPECT_EQ(settings[1].value, "inf");
  EXPECT_EQ(ChooseUcxSettings("tcp", {}, 4 << 20)[0].value, std::to_string(8 << 20));
}

// UCX's default TCP fragments (8 KiB sends, 64 KiB receives) cost one syscall
// and one UCP fragment each: 12k send() calls per rank per 64 MiB all-reduce.
TEST(UcxTuningTest, TcpOnlyUsesLargeFragments) {
  auto settings = ChooseUcxSettings("tcp,self", {"UCX_TLS"}, 512 * 1024);
  ASSERT_EQ(settings.size(), 4u);
  // ucp_config_modify applies a transport's option by its name within the
  // transport ("TX_SEG_SIZE"); with the TCP_ prefix UCX 1.13 accepts and ignores it.
  EXPECT_EQ(settings[2].name, "TX_SEG_SIZE");
  EXPECT_EQ(settings[2].variable, "UCX_TCP_TX_SEG_SIZE");
  EXPECT_EQ(settings[2].value, "262144");
  EXPECT_FALSE(settings[2].why.empty());
  EXPECT_EQ(settings[3].name, "RX_SEG_SIZE");  // a fragment fits one receive buffer
  EXPECT_EQ(settings[3].variable, "UCX_TCP_RX_SEG_SIZE");
  EXPECT_EQ(settings[3].value, settings[2].value);
  EXPECT_EQ(settings[0].variable, "UCX_RNDV_THRESH");
}

TEST(UcxTuningTest, NothingWhereSharedMemoryOrRdmaMayBeUsed) {
  EXPECT_TRUE(ChooseUcxSettings("", {}, 512 * 1024).empty());
  EXPECT_TRUE(ChooseUcxSettings("posix,cma,tcp", {}, 512 * 1024).empty());
  EXPECT_TRUE(ChooseUcxSettings("rc_x,tcp", {}, 512 * 1024).empty());
}

TEST(UcxTuningTest, NeverOverridesTheUser) {
  auto settings = ChooseUcxSettings("tcp", {"UCX_TLS", "UCX_RNDV_THRESH"}, 512 * 1024);
  ASSERT_EQ(settings.size(), 3u);
  EXPECT_EQ(settings[0].name, "ZCOPY_THRESH");
  settings = ChooseUcxSettings("tcp", {"UCX_TCP_TX_SEG_SIZE", "UCX_ZCOPY_THRESH"}, 512 * 1024);
  ASSERT_EQ(settings.size(), 2u);
  EXPECT_EQ(settings[0].name, "RNDV_THRESH");
  EXPECT_EQ(settings[1].name, "RX_SEG_SIZE");
  EXPECT_TRUE(ChooseUcxSettings("tcp",
                                {"UCX_RNDV_THRESH", "UCX_ZCOPY_THRESH", "UCX_TCP_TX_SEG_SIZE",
                                 "UCX_TCP_RX_SEG_SIZE"},
                                512 * 1024)
                  .empty());
}

TEST(UcxTuningTest, TcpBuffersCoverTwiceTheBandwidthDelayProduct) {
  EXPECT_EQ(TcpBufferBytes(0.05, 125e6), 12500000u);  // 1 Gbit/s x 50 ms = 6.25 MB
  EXPECT_EQ(TcpBufferBytes(1e-4, 125e6), 256u << 10);  // a LAN: the floor
  EXPECT_EQ(TcpBufferBytes(1.0, 125e9), 256u << 20);   // the ceiling
}

// This machine's Debian defaults: tcp_wmem 4 MiB, tcp_rmem 32 MiB, [rw]mem_max 4 MiB.
constexpr TcpBufferLimits kDebian{4 << 20, 32 << 20, 4 << 20, 4 << 20};

TEST(UcxTuningTest, TcpBuffersOnlyWhereAutotuningFallsShort) {
  // 1 Gbit/s x 50 ms wants 12.5 MB: the receive side autotunes to 32 MiB (left
  // alone: setting it would cap it at 8 MiB); the send side stops at 4 MiB, and
  // a set SO_SNDBUF gives twice wmem_max, 8 MiB.
  auto set = ChooseTcpBuffers("tcp", {}, 0.05, 125e6, kDebian);
  ASSERT_EQ(set.size(), 1u);
  EXPECT_EQ(set[0].name, "SNDBUF");  // the TCP transport's own name: UCX ignores TCP_SNDBUF
  EXPECT_EQ(set[0].variable, "UCX_TCP_SNDBUF");
  EXPECT_EQ(set[0].value, std::to_string(4 << 20));
  EXPECT_FALSE(set[0].why.empty());
  // Room to set the whole want: half of it, which the kernel doubles.
  auto roomy = ChooseTcpBuffers("tcp", {}, 0.05, 125e6, {4 << 20, 4 << 20, 64 << 20, 64 << 20});
  ASSERT_EQ(roomy.size(), 2u);
  EXPECT_EQ(roomy[0].value, "6250000");
  EXPECT_EQ(roomy[1].name, "RCVBUF");
  EXPECT_EQ(roomy[1].value, "6250000");
  // A set size that would not beat autotuning (2 x 1 MiB < 4 MiB) is not set.
  EXPECT_TRUE(ChooseTcpBuffers("tcp", {}, 0.05, 125e6, {4 << 20, 4 << 20, 1 << 20, 1 << 20})
                  .empty());
  EXPECT_TRUE(ChooseTcpBuffers("tcp", {}, 0.05, 125e6, {32 << 20, 32 << 20, 4 << 20, 4 << 20})
                  .empty());                                                     // autotuning reaches
  EXPECT_TRUE(ChooseTcpBuffers("tcp", {}, 0.05, 125e6, TcpBufferLimits{}).empty());  // unknown
  EXPECT_TRUE(ChooseTcpBuffers("tcp", {}, 0, 125e6, kDebian).empty());  // link unknown
  EXPECT_TRUE(ChooseTcpBuffers("tcp", {}, 0.05, 0, kDebian).empty());
  EXPECT_TRUE(ChooseTcpBuffers("", {}, 0.05, 125e6, kDebian).empty());  // not TCP only
  EXPECT_TRUE(ChooseTcpBuffers("tcp", {"UCX_TCP_SNDBUF"}, 0.05, 125e6, kDebian).empty());  // user's
}

}  // namespace
}  // namespace sieve::transport
