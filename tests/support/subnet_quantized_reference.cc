// The quantized subnet oracle: groups as DESIGN.md 1.4/1.5 define them, each
// one the ternary reference's masked case (kept = the group's elements).
#include "support/subnet_quantized_reference.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <utility>

namespace sieve_test {

namespace {

// recvbuff after `steps` calls with the same sendbuff (results[t]: after call t, Philox step
// c.step + t), with error feedback or without (then every call is the first one).
std::vector<std::vector<char>> Expected(const TernaryCase& c, const TestLayout& layout,
                                        const Touched* touched, int rank, const void* before,
                                        int steps, bool feedback, const std::vector<bool>* mask) {
  const size_t count = LayoutCount(layout), es = c.dtype == sieveFloat32 ? 4 : 2;
  const char* was = static_cast<const char*>(before);
  std::vector<std::vector<char>> out(static_cast<size_t>(steps),
                                     std::vector<char>(was, was + count * es));
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
    for (size_t j = layout[k].offset; j < layout[k].offset + layout[k].length; ++j) {
      kept[j] = mask == nullptr || (*mask)[j];
      if (!kept[j])  // dropped by the mask in a segment this rank holds: 0
        for (std::vector<char>& o : out) std::memset(o.data() + j * es, 0, es);
    }
  }
  for (const auto& group : groups) {
    const std::vector<int>& t = group.first.first;
    TernaryCase g = c;
    g.count = count;
    g.op = sieveAvg;
    g.kept = &group.second;
    g.ranks = &t;
    std::vector<std::vector<char>> results;
    if (t.size() == 1) {  // moves nothing: its input, every time (the residual waits)
      results.assign(static_cast<size_t>(steps), TernaryCaseInput(g, t[0]));
    } else if (feedback) {
      results = ExpectedTernaryFeedback(g, steps);
    } else {
      results.assign(static_cast<size_t>(steps), ExpectedTernary(g));
    }
    for (size_t s = 0; s < out.size(); ++s)
      for (size_t j = 0; j < count; ++j)
        if (group.second[j]) std::memcpy(out[s].data() + j * es, results[s].data() + j * es, es);
  }
  return out;
}

}  // namespace

void ExpectedSubnetQuantized(const TernaryCase& c, const TestLayout& layout,
                             const Touched* touched, int rank, const void* before,
                             void* expected, const std::vector<bool>* mask) {
  const std::vector<char> out = Expected(c, layout, touched, rank, before, 1, false, mask)[0];
  std::memcpy(expected, out.data(), out.size());
}

std::vector<std::vector<char>> ExpectedSubnetQuantizedFeedback(
    const TernaryCase& c, const TestLayout& layout, const Touched* touched, int rank,
    const void* before, int steps, const std::vector<bool>* mask) {
  return Expected(c, layout, touched, rank, before, steps, true, mask);
}

}  // namespace sieve_test
