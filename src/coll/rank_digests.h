// Reading small agreement messages: every rank all-gathers a few 64-bit words (its count, a
// hash, a flag), `width` words per rank in rank order, so rank r's word f is all[width * r + f],
// and every rank draws the same verdict from them. Pure functions of the received words, so the
// verdicts built on them (mask/mask_agreement.h, subnet/layout_agreement.h) can be fuzzed; the
// all-gather itself is coll::AllGatherWords (coll/collectives.h).
#ifndef SIEVE_COLL_RANK_DIGESTS_H_
#define SIEVE_COLL_RANK_DIGESTS_H_

#include <cstddef>
#include <cstdint>
#include <string>

namespace sieve::coll {

// "2, 5": the ranks r >= 1 whose word `field` differs from rank 0's; "" when none does.
// REQUIRES: all holds width * nranks words, field < width.
std::string RanksDifferingFromRank0(const uint64_t* all, int nranks, size_t width, size_t field);

// "2, 5": the ranks whose word `field` is 0 (a flag left clear); "" when none is.
// REQUIRES: as above.
std::string RanksWithZero(const uint64_t* all, int nranks, size_t width, size_t field);

}  // namespace sieve::coll

#endif  // SIEVE_COLL_RANK_DIGESTS_H_
