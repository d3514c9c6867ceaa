// Two "hosts" for the multi-process tests: network namespaces fault-<pid>-a/b joined by a
// veth pair (fv0 in each, 10.99.0.1 and .2), each rank entering its host's namespace with its
// own host name and /sys (as `ip netns exec`), UCX over TCP only. Needs root and iproute2:
// skip() says why not otherwise. The namespaces are deleted on destruction, whatever the
// outcome.
#ifndef SIEVE_TESTS_SUPPORT_TWO_HOSTS_H_
#define SIEVE_TESTS_SUPPORT_TWO_HOSTS_H_

#include <string>

#include "support/mp_harness.h"

namespace sieve_test {

// The two namespaces and the veth between them; removed on destruction.
class TwoHosts {
 public:
  TwoHosts();
  ~TwoHosts();
  TwoHosts(const TwoHosts&) = delete;
  TwoHosts& operator=(const TwoHosts&) = delete;

  // Empty when the hosts are up, else why the test must be skipped.
  const std::string& skip() const { return skip_; }
  static std::string Addr(int host) { return host == 0 ? "10.99.0.1" : "10.99.0.2"; }
  // Ranks 0, 1 on host a; 2, 3 on host b.
  static int HostOf(int rank) { return rank < 2 ? 0 : 1; }

  // In a rank's process: enter its host's namespaces and name; 0 on success.
  int Enter(int rank) const;
  // Drops every packet between the hosts (nothing is reset: a silent partition).
  bool Partition() const;
  // Bytes host `h` has sent over the link so far, or -1 when unreadable.
  long long TxBytes(int h) const;
  // Shapes both directions to `rate` (tc tbf) with a short queue (50 ms): after a cut, what
  // was already queued stops flowing at once, so the time to the error is the timeout's,
  // not the queue's.
  bool Shape(const char* rate) const;

 private:
  std::string ns_[2];
  std::string skip_;
};

// Four ranks on the two hosts (HostOf), bootstrap and UCX on fv0 over TCP, SIEVE_TIMEOUT =
// `timeout` seconds, NET logging at INFO, the harness's hang limit at 60 s.
RankSpec HostSpec(const TwoHosts& hosts, const char* timeout);

}  // namespace sieve_test

#endif  // SIEVE_TESTS_SUPPORT_TWO_HOSTS_H_
