// Which ranks share a host: every rank's host index (hosts numbered by their
// lowest rank) and local index (its position among that host's ranks), built
// from one host identity per rank. Pure data, no I/O.
#ifndef SIEVE_COMM_HOST_LAYOUT_H_
#define SIEVE_COMM_HOST_LAYOUT_H_

#include <cstdint>
#include <string>
#include <vector>

namespace sieve {

struct HostLayout {
  std::vector<int> host;   // rank -> host index
  std::vector<int> local;  // rank -> index among the ranks of its host
  int nhosts = 1;
  int max_local = 1;    // most ranks on one host
  bool uniform = true;  // every host has max_local ranks

  // From the host identities of ranks 0..n-1 (equal ids = same host).
  static HostLayout FromIds(const std::vector<uint64_t>& ids);

  // Several hosts, several ranks on each, the same number everywhere: the
  // shape the hierarchical all-reduce runs on.
  bool Hierarchical() const { return nhosts > 1 && max_local > 1 && uniform; }
  // Ranks on rank's host, in rank order.
  std::vector<int> SameHost(int rank) const;
  // Ranks with rank's local index, one per host, in host order.
  std::vector<int> SameLocalIndex(int rank) const;
  // "2 hosts x 2 ranks" or "3 hosts, 1 to 4 ranks each", for logs.
  std::string Describe() const;
};

}  // namespace sieve

#endif  // SIEVE_COMM_HOST_LAYOUT_H_
