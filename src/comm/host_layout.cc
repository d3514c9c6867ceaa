// HostLayout: grouping ranks by host identity.
#include "comm/host_layout.h"

#include <algorithm>
#include <map>

#include "core/status.h"

namespace sieve {

HostLayout HostLayout::FromIds(const std::vector<uint64_t>& ids) {
  HostLayout l;
  l.host.resize(ids.size());
  l.local.resize(ids.size());
  std::map<uint64_t, int> index;  // id -> host index, in order of first appearance
  std::vector<int> ranks_on;      // host index -> ranks seen so far
  for (size_t r = 0; r < ids.size(); ++r) {
    auto [it, fresh] = index.emplace(ids[r], static_cast<int>(ranks_on.size()));
    if (fresh) ranks_on.push_back(0);
    l.host[r] = it->second;
    l.local[r] = ranks_on[it->second]++;
  }
  l.nhosts = std::max<int>(1, static_cast<int>(ranks_on.size()));
  l.max_local = ranks_on.empty() ? 1 : *std::max_element(ranks_on.begin(), ranks_on.end());
  l.uniform =
      std::all_of(ranks_on.begin(), ranks_on.end(), [&](int c) { return c == l.max_local; });
  return l;
}

std::vector<int> HostLayout::SameHost(int rank) const {
  std::vector<int> out;
  for (size_t r = 0; r < host.size(); ++r)
    if (host[r] == host[rank]) out.push_back(static_cast<int>(r));
  return out;
}

std::vector<int> HostLayout::SameLocalIndex(int rank) const {
  std::vector<int> out(nhosts, -1);
  for (size_t r = 0; r < host.size(); ++r)
    if (local[r] == local[rank]) out[host[r]] = static_cast<int>(r);
  out.erase(std::remove(out.begin(), out.end(), -1), out.end());
  return out;
}

std::string HostLayout::Describe() const {
  if (uniform)
    return StrFormat("%d host%s x %d rank%s", nhosts, nhosts == 1 ? "" : "s", max_local,
                     max_local == 1 ? "" : "s");
  std::vector<int> count(nhosts, 0);
  for (int h : host) ++count[h];
  return StrFormat("%d hosts, %d to %d ranks each", nhosts,
                   *std::min_element(count.begin(), count.end()), max_local);
}

}  // namespace sieve
