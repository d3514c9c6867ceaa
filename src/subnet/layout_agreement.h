// What ranks conclude from the layout registration message: every rank all-gathers
// {valid, count, number of segments, hash} (4 words); a pure function of those words so it is
// fuzzed.
#ifndef SIEVE_SUBNET_LAYOUT_AGREEMENT_H_
#define SIEVE_SUBNET_LAYOUT_AGREEMENT_H_

#include <cstdint>
#include <string>

namespace sieve::subnet {

struct LayoutVerdict {
  enum Kind { kSame, kInvalid, kCountDiffers, kLayoutDiffers };
  Kind kind = kSame;
  std::string ranks;  // "2, 5": the ranks concerned (invalid, or differing from rank 0)
};
// REQUIRES: all holds 4 * nranks words, nranks >= 1.
LayoutVerdict CompareLayoutDigests(const uint64_t* all, int nranks);

}  // namespace sieve::subnet

#endif  // SIEVE_SUBNET_LAYOUT_AGREEMENT_H_
