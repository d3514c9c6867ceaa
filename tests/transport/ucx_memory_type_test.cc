// What the UCX transport tells UCX about each buffer, read from the TRACE
// line it writes from the very request parameters it posts: host buffers are
// declared UCS_MEMORY_TYPE_HOST, device buffers are left to UCX's detection
// (ucx_transport.cc says why), for sends and receives alike, and the message
// arrives either way (this UCX detects the host memory behind "device").
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "core/clock.h"
#include "support/log_capture.h"
#include "transport/factory.h"
#include "transport/tag.h"

namespace sieve::transport {
namespace {

// This executable logs at TRACE (NET only); the logger reads it on first use.
const bool kTrace = [] {
  setenv("SIEVE_DEBUG", "TRACE", 1);
  setenv("SIEVE_DEBUG_SUBSYS", "NET", 1);
  return true;
}();

TEST(UcxMemoryTypeTest, HostIsDeclaredAndDeviceIsLeftToUcxDetection) {
  ASSERT_TRUE(kTrace);
  sieve_test::LogCapture log;
  std::vector<std::unique_ptr<Transport>> t(2);
  std::vector<PeerAddress> peers(2);
  for (int r = 0; r < 2; ++r) {
    ASSERT_TRUE(CreateTransport(TransportOptions(), r, 2, &t[r]).ok());
    peers[r].address = t[r]->LocalAddress();
    peers[r].same_host = true;
    peers[r].pid = static_cast<int>(getpid());
  }
  for (int r = 0; r < 2; ++r) ASSERT_TRUE(t[r]->SetPeers(peers).ok());
  std::vector<char> host_out(100, 'h'), device_out(200, 'd'), host_in(100), device_in(200);
  Request r1, r2, s1, s2;
  ASSERT_TRUE(t[1]->Irecv(0, MakeTag(0, false, 1, 1), host_in.data(), 100, MemoryType::kHost, &r1).ok());
  ASSERT_TRUE(t[1]->Irecv(0, MakeTag(0, false, 1, 2), device_in.data(), 200, MemoryType::kDevice, &r2).ok());
  ASSERT_TRUE(t[0]->Isend(1, MakeTag(0, false, 1, 1), host_out.data(), 100, MemoryType::kHost, &s1).ok());
  ASSERT_TRUE(t[0]->Isend(1, MakeTag(0, false, 1, 2), device_out.data(), 200, MemoryType::kDevice, &s2).ok());
  const double deadline = MonotonicSeconds() + 10;
  auto pending = [](const Request& r) { return r.state == Request::kPending; };
  while ((pending(r1) || pending(r2) || pending(s1) || pending(s2)) && MonotonicSeconds() < deadline)
    for (auto& x : t) x->Progress();
  ASSERT_EQ(r1.state, Request::kDone) << r1.error;
  ASSERT_EQ(r2.state, Request::kDone) << r2.error;
  EXPECT_EQ(host_in, host_out);
  EXPECT_EQ(device_in, device_out);
  // One line per post: the tag names the message, the rest what UCX was told.
  auto told = [&](uint32_t index, const char* what) {
    return log.Count(StrFormat("tag 0x%016llx, %s",
                               static_cast<unsigned long long>(MakeTag(0, false, 1, index)), what));
  };
  EXPECT_EQ(told(1, "host buffer, memory type host"), 2);  // the send and its receive
  EXPECT_EQ(told(2, "device buffer, memory type detected by UCX"), 2);
  EXPECT_EQ(told(2, "device buffer, memory type host"), 0);
  EXPECT_EQ(log.Count("UCX send 200 bytes to rank 1"), 1);
  EXPECT_EQ(log.Count("UCX recv 200 bytes"), 1);
}

}  // namespace
}  // namespace sieve::transport
