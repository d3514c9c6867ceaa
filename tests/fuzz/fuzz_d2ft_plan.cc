// Fuzzes the D2FT bitmap parser: the schedule table every rank receives (nranks rows of
// ceil(K/8) bytes) turned into a plan over a layout. A plan must move exactly the segments some
// holder touched, with those holders as senders and the other holders as receivers, and a bit
// set by a non-holder must be refused.
#include <algorithm>
#include <vector>

#include "fuzz_check.h"
#include "subnet/subnet_allreduce.h"

using namespace sieve::subnet;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  sieve_fuzz::Reader in(data, size);
  const int nranks = 1 + in.Take<uint8_t>() % 16;
  const int k_count = 1 + in.Take<uint8_t>() % 80;
  LayoutState layout;
  layout.offsets.push_back(0);
  for (int k = 0; k < k_count; ++k) {
    layout.offsets.push_back(layout.offsets.back() + in.Take<uint8_t>() % 5);  // empty allowed
    uint16_t mask = in.Take<uint16_t>() & ((1u << nranks) - 1);
    if (mask == 0) mask = 1;
    std::vector<int> holders;
    for (int r = 0; r < nranks; ++r)
      if (mask & (1u << r)) holders.push_back(r);
    layout.holders.push_back(holders);
  }
  layout.count = layout.offsets.back();
  const size_t row_bytes = (static_cast<size_t>(k_count) + 7) / 8;
  std::vector<unsigned char> table(row_bytes * nranks);
  for (auto& b : table) b = in.Take<uint8_t>();
  if (in.Take<uint8_t>() & 1) table.resize(table.size() - 1);  // a short table is refused

  Plan plan;
  sieve::Status st = BuildD2ftPlan(layout, nranks, table, &plan);
  if (table.size() < row_bytes * nranks) {
    FUZZ_CHECK(!st.ok());
    return 0;
  }
  auto touched = [&](int r, int k) { return (table[r * row_bytes + k / 8] >> (k % 8)) & 1; };
  auto holds = [&](int r, int k) {
    const auto& h = layout.holders[k];
    return std::binary_search(h.begin(), h.end(), r);
  };
  bool stray = false;
  for (int r = 0; r < nranks; ++r)
    for (int k = 0; k < k_count; ++k) stray |= touched(r, k) && !holds(r, k);
  FUZZ_CHECK(st.ok() == !stray);
  if (!st.ok()) return 0;
  // Every element of a touched segment is in exactly one group, with the right roles.
  std::vector<int> covered(layout.count, 0);
  for (const GroupPlan& g : plan.groups) {
    FUZZ_CHECK(!g.senders.empty());
    for (const Range& rg : g.ranges) {
      for (size_t e = rg.offset; e < rg.offset + rg.length; ++e) {
        FUZZ_CHECK(e < layout.count);
        ++covered[e];
        int k = static_cast<int>(std::upper_bound(layout.offsets.begin(), layout.offsets.end(), e) -
                                 layout.offsets.begin()) - 1;
        for (int r = 0; r < nranks; ++r) {
          bool sends = std::binary_search(g.senders.begin(), g.senders.end(), r);
          bool receives = std::binary_search(g.receivers.begin(), g.receivers.end(), r);
          FUZZ_CHECK(sends == (holds(r, k) && touched(r, k) != 0));
          FUZZ_CHECK(receives == (holds(r, k) && touched(r, k) == 0));
        }
      }
    }
  }
  for (int k = 0; k < k_count; ++k) {
    bool any = false;
    for (int r = 0; r < nranks; ++r) any |= touched(r, k) != 0;
    for (size_t e = layout.offsets[k]; e < layout.offsets[k + 1]; ++e)
      FUZZ_CHECK(covered[e] == (any ? 1 : 0));
  }
  return 0;
}
