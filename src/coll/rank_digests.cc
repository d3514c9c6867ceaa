// Rank lists of the agreement messages (see rank_digests.h).
#include "coll/rank_digests.h"

namespace sieve::coll {
namespace {

// "2, 5": the ranks r in [first, nranks) for which picked(word `field` of rank r) holds.
template <typename Pick>
std::string RanksWhere(const uint64_t* all, int nranks, size_t width, size_t field, int first,
                       Pick picked) {
  std::string out;
  for (int r = first; r < nranks; ++r) {
    if (!picked(all[width * static_cast<size_t>(r) + field])) continue;
    if (!out.empty()) out += ", ";
    out += std::to_string(r);
  }
  return out;
}

}  // namespace

std::string RanksDifferingFromRank0(const uint64_t* all, int nranks, size_t width, size_t field) {
  const uint64_t rank0 = all[field];
  return RanksWhere(all, nranks, width, field, 1, [rank0](uint64_t v) { return v != rank0; });
}

std::string RanksWithZero(const uint64_t* all, int nranks, size_t width, size_t field) {
  return RanksWhere(all, nranks, width, field, 0, [](uint64_t v) { return v == 0; });
}

}  // namespace sieve::coll
