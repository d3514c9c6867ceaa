// A subnet exchange plan: the buffer's segments grouped by who sends (the
// ring) and who only receives, in one global order, identical on every rank.
// Built once per layout for SDP and once per touched-bitmap pattern for D2FT.
#ifndef SIEVE_SUBNET_SUBNET_PLAN_H_
#define SIEVE_SUBNET_SUBNET_PLAN_H_

#include <algorithm>
#include <cstddef>
#include <deque>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/status.h"

namespace sieve::subnet {

struct Range {
  size_t offset = 0;  // first element
  size_t length = 0;  // elements
};

struct GroupPlan {
  std::vector<int> senders;    // ascending: their average is the result; they form the ring
  std::vector<int> receivers;  // ascending holders outside `senders`: receive the result only
  std::vector<Range> ranges;   // ascending, disjoint: the elements the group exchanges
  size_t elems = 0;            // sum of the ranges' lengths

  // Whether `rank` sends or receives in this group (what it writes, it takes part in).
  bool Involves(int rank) const {
    return std::binary_search(senders.begin(), senders.end(), rank) ||
           std::binary_search(receivers.begin(), receivers.end(), rank);
  }
};

struct Plan {
  std::vector<GroupPlan> groups;  // ordered by first offset: the same order on every rank
};

// What one segment needs: `senders` empty means nothing moves for it.
struct SegmentRole {
  std::vector<int> senders;
  std::vector<int> receivers;
};

// Groups segments [offsets[k], offsets[k+1]) by equal (senders, receivers),
// merging adjacent ranges; segments without senders are left out.
Plan GroupSegments(const std::vector<size_t>& offsets, const std::vector<SegmentRole>& roles);

// A bounded cache of D2FT plans keyed by the schedule table's bytes; the
// oldest entry is dropped when full. Thread-compatible (one per layout, used
// by the communicator's one thread).
class PlanCache {
 public:
  static constexpr size_t kCapacity = 64;
  std::shared_ptr<const Plan> Find(const std::string& key) const;
  void Insert(const std::string& key, std::shared_ptr<const Plan> plan);
  size_t size() const { return plans_.size(); }

 private:
  std::unordered_map<std::string, std::shared_ptr<const Plan>> plans_;
  std::deque<std::string> order_;
};

}  // namespace sieve::subnet

#endif  // SIEVE_SUBNET_SUBNET_PLAN_H_
