// Plan building: one pass over the segments with a map from (senders,
// receivers) to the group's index, so groups keep first-appearance order.
#include "subnet/subnet_plan.h"

#include <map>
#include <utility>

namespace sieve::subnet {

Plan GroupSegments(const std::vector<size_t>& offsets, const std::vector<SegmentRole>& roles) {
  Plan plan;
  std::map<std::pair<std::vector<int>, std::vector<int>>, size_t> index;
  for (size_t k = 0; k < roles.size(); ++k) {
    const SegmentRole& role = roles[k];
    if (role.senders.empty()) continue;
    auto key = std::make_pair(role.senders, role.receivers);
    auto it = index.find(key);
    if (it == index.end()) {
      it = index.emplace(std::move(key), plan.groups.size()).first;
      plan.groups.emplace_back();
      plan.groups.back().senders = role.senders;
      plan.groups.back().receivers = role.receivers;
    }
    GroupPlan& group = plan.groups[it->second];
    const size_t begin = offsets[k], length = offsets[k + 1] - offsets[k];
    if (!group.ranges.empty() && group.ranges.back().offset + group.ranges.back().length == begin)
      group.ranges.back().length += length;
    else
      group.ranges.push_back({begin, length});
    group.elems += length;
  }
  return plan;
}

std::shared_ptr<const Plan> PlanCache::Find(const std::string& key) const {
  auto it = plans_.find(key);
  return it == plans_.end() ? nullptr : it->second;
}

void PlanCache::Insert(const std::string& key, std::shared_ptr<const Plan> plan) {
  if (plans_.count(key) != 0) return;
  if (plans_.size() >= kCapacity) {
    plans_.erase(order_.front());
    order_.pop_front();
  }
  plans_.emplace(key, std::move(plan));
  order_.push_back(key);
}

}  // namespace sieve::subnet
