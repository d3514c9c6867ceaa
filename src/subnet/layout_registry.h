// A registered subnet layout: segments partitioning a buffer, each held by a
// set of ranks, agreed on by every rank (hash), with its SDP plan precomputed
// and a cache of D2FT plans. Register builds one collectively.
#ifndef SIEVE_SUBNET_LAYOUT_REGISTRY_H_
#define SIEVE_SUBNET_LAYOUT_REGISTRY_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "comm/comm.h"
#include "sieve.h"
#include "subnet/subnet_plan.h"

namespace sieve::subnet {

struct SegmentSpec {
  size_t offset = 0;
  size_t length = 0;
  std::vector<int> holders;  // ascending, no duplicates, ranks of the communicator
};

struct LayoutState {
  uint64_t comm_serial = 0;               // Comm::serial() of the communicator it was registered on
  size_t count = 0;                       // elements of the buffers it applies to
  uint64_t hash = 0;                      // LayoutHash: the layout's identity in fingerprints
  std::vector<size_t> offsets;            // K+1 entries: segment k = [offsets[k], offsets[k+1])
  std::vector<std::vector<int>> holders;  // per segment
  std::shared_ptr<const Plan> sdp_plan;   // groups by holder set
  PlanCache d2ft_plans;                   // by touched-bitmap pattern

  int num_segments() const { return static_cast<int>(holders.size()); }
};

// What one layout may hold, so that what a registration allocates is bounded
// (about 100 bytes per segment and 8 per holder entry): at most
// kMaxLayoutSegments segments and kMaxLayoutHolders holder entries (the sum of
// nholders over the segments). Beyond: InvalidArgument saying so.
// (SIEVE_LAYOUT_MAX_SEGMENTS and SIEVE_LAYOUT_MAX_HOLDERS in sieve.h).
constexpr size_t kMaxLayoutSegments = SIEVE_LAYOUT_MAX_SEGMENTS;
constexpr size_t kMaxLayoutHolders = SIEVE_LAYOUT_MAX_HOLDERS;
Status CheckLayoutSize(size_t segments, size_t holder_entries);

// Checks that `segments` partition [0, count) in offset order with holder sets
// of ranks 0..nranks-1 (ascending, no duplicates, non-empty).
Status ValidateSegments(size_t count, const std::vector<SegmentSpec>& segments, int nranks);

// Segments of an SDP mask matrix (nranks rows of nblocks bytes): runs of blocks
// with equal holder sets merged. Fails on a block without holders or when
// nblocks != ceil(count / block_size).
Status SegmentsFromMaskMatrix(const unsigned char* matrix, int nranks, size_t nblocks,
                              size_t block_size, size_t count, std::vector<SegmentSpec>* out);

// nsubnets segments of count/nsubnets elements (the last takes the remainder),
// each held by every rank. Fails unless 1 <= nsubnets <= count.
Status EqualSubnetSegments(size_t count, int nsubnets, int nranks, std::vector<SegmentSpec>* out);

// A 64-bit hash of (count, segments): equal layouts hash equal.
uint64_t LayoutHash(size_t count, const std::vector<SegmentSpec>& segments);

// Collective over comm. `local` is what this rank's own checks found (OK or
// the error to report); segments are validated too. Every rank then learns
// whether any rank's layout was invalid or differs from rank 0's, and fails
// alike, naming those ranks.
Status Register(Comm& comm, size_t count, std::vector<SegmentSpec> segments, Status local,
                std::shared_ptr<LayoutState>* out);

}  // namespace sieve::subnet

#endif  // SIEVE_SUBNET_LAYOUT_REGISTRY_H_
