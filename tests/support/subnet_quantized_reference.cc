// The quantized subnet oracle: groups as DESIGN.md 1.4/1.5 define them, each
// one the ternary reference's masked case (kept = the group's elements).
#include "support/subnet_quantized_reference.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <utility>

namespace sieve_test {

void ExpectedSubnetQuantized(const TernaryCase& c, const TestLayout& layout,
                             const Touched* touched, int rank, const void* before,
                             void* expected) {
  const size_t count = LayoutCount(layout), es = c.dtype == sieveFloat32 ? 4 : 2;
  std::memcpy(expected, before, count * es);
  // (contributors, other holders) -> the group's elements.
  std::map<std::pair<std::vector<int>, std::vector<int>>, std::vector<bool>> groups;
  for (size_t k = 0; k < layout.size(); ++k) {
    const std::vector<int>& holders = layout[k].holders;
    std::vector<int> t = Contributors(layout, touched, k), others;
    if (t.empty() || !std::binary_search(holders.begin(), holders.end(), rank)) continue;
    std::set_difference(holders.begin(), holders.end(), t.begin(), t.end(),
                        std::back_inserter(others));
    std::vector<bool>& kept = groups[{t, others}];
    kept.resize(count, false);
    std::fill(kept.begin() + static_cast<ptrdiff_t>(layout[k].offset),
              kept.begin() + static_cast<ptrdiff_t>(layout[k].offset + layout[k].length), true);
  }
  char* out = static_cast<char*>(expected);
  for (const auto& group : groups) {
    const std::vector<int>& t = group.first.first;
    TernaryCase g = c;
    g.count = count;
    g.op = sieveAvg;
    g.kept = &group.second;
    g.ranks = &t;
    const std::vector<char> result =
        t.size() == 1 ? TernaryCaseInput(g, t[0]) : ExpectedTernary(g);
    for (size_t j = 0; j < count; ++j)
      if (group.second[j]) std::memcpy(out + j * es, result.data() + j * es, es);
  }
}

}  // namespace sieve_test
