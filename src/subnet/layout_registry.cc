// Layout registration: validate, build segments from the helpers' inputs, and
// agree across ranks with one all-gather of 32 bytes per rank (valid flag,
// count, number of segments, hash).
#include "subnet/layout_registry.h"

#include <algorithm>
#include <string>

#include "coll/collectives.h"
#include "core/mix64.h"
#include "subnet/layout_agreement.h"

namespace sieve::subnet {
namespace {

Status Agree(Comm& comm, bool valid, size_t count, size_t nsegments, uint64_t hash) {
  const int n = comm.size();
  const uint64_t mine[4] = {valid ? 1u : 0u, count, nsegments, hash};
  std::vector<uint64_t> all;
  SIEVE_RETURN_IF_ERROR(coll::AllGatherWords(comm, mine, 4, &all));
  LayoutVerdict v = CompareLayoutDigests(all.data(), n);
  switch (v.kind) {
    case LayoutVerdict::kSame:
      return Status::OK();
    case LayoutVerdict::kInvalid:
      return Status::InvalidUsage(StrFormat(
          "the subnet layout of rank(s) %s is invalid (their error says why)", v.ranks.c_str()));
    case LayoutVerdict::kCountDiffers:
      return Status::InvalidUsage(StrFormat(
          "subnet layout count differs across ranks: rank 0 passed %llu, rank(s) %s another",
          static_cast<unsigned long long>(all[1]), v.ranks.c_str()));
    case LayoutVerdict::kLayoutDiffers:
      break;
  }
  return Status::InvalidUsage(
      StrFormat("subnet layout mismatch: rank(s) %s passed a layout that differs from rank 0's "
                "(segments, offsets or holders); every rank must register the same layout",
                v.ranks.c_str()));
}

std::string HolderList(const std::vector<int>& holders) {
  std::string out;
  for (int r : holders) out += (out.empty() ? "" : ", ") + std::to_string(r);
  return out;
}

}  // namespace

Status CheckLayoutSize(size_t segments, size_t holder_entries) {
  if (segments > kMaxLayoutSegments)
    return Status::InvalidArgument(StrFormat(
        "a layout of %zu segments exceeds the limit of %zu per layout", segments,
        kMaxLayoutSegments));
  if (holder_entries > kMaxLayoutHolders)
    return Status::InvalidArgument(StrFormat(
        "a layout with %zu holder entries (the sum of nholders over its segments) exceeds the "
        "limit of %zu per layout",
        holder_entries, kMaxLayoutHolders));
  return Status::OK();
}

Status ValidateSegments(size_t count, const std::vector<SegmentSpec>& segments, int nranks) {
  if (segments.empty()) return Status::InvalidArgument("a layout needs at least one segment");
  size_t expect = 0;
  for (size_t k = 0; k < segments.size(); ++k) {
    const SegmentSpec& s = segments[k];
    if (s.offset != expect)
      return Status::InvalidArgument(StrFormat(
          "segment %zu starts at element %zu, expected %zu: segments must be sorted by offset "
          "and partition [0, count) without gaps or overlaps",
          k, s.offset, expect));
    if (s.length == 0) return Status::InvalidArgument(StrFormat("segment %zu has length 0", k));
    if (s.length > count - s.offset)
      return Status::InvalidArgument(
          StrFormat("segment %zu [%zu, +%zu) ends past count %zu", k, s.offset, s.length, count));
    if (s.holders.empty() || s.holders.size() > static_cast<size_t>(nranks))
      return Status::InvalidArgument(
          StrFormat("segment %zu has %zu holders; it needs 1..%d", k, s.holders.size(), nranks));
    for (size_t i = 0; i < s.holders.size(); ++i) {
      int r = s.holders[i];
      if (r < 0 || r >= nranks)
        return Status::InvalidArgument(StrFormat(
            "segment %zu: holder %d is not a rank of this communicator (0..%d)", k, r, nranks - 1));
      if (i > 0 && r <= s.holders[i - 1])
        return Status::InvalidArgument(
            StrFormat("segment %zu: holders (%s) must be ascending without duplicates", k,
                      HolderList(s.holders).c_str()));
    }
    expect = s.offset + s.length;
  }
  if (expect != count)
    return Status::InvalidArgument(StrFormat(
        "segments cover [0, %zu) but count is %zu: they must partition the buffer", expect, count));
  return Status::OK();
}

Status SegmentsFromMaskMatrix(const unsigned char* matrix, int nranks, size_t nblocks,
                              size_t block_size, size_t count, std::vector<SegmentSpec>* out) {
  out->clear();
  if (block_size == 0) return Status::InvalidArgument("block_size is 0");
  const size_t needed = count / block_size + (count % block_size != 0);  // no count + block - 1
  if (nblocks != needed)
    return Status::InvalidArgument(
        StrFormat("nblocks %zu does not match count %zu with block_size %zu (needs %zu)", nblocks,
                  count, block_size, needed));
  if (nblocks > SIZE_MAX / static_cast<size_t>(nranks))
    return Status::InvalidArgument(StrFormat(
        "a mask matrix of %d ranks x %zu blocks overflows the addressable size", nranks, nblocks));
  std::vector<int> holders;
  size_t holder_entries = 0;
  for (size_t b = 0; b < nblocks; ++b) {
    holders.clear();
    for (int r = 0; r < nranks; ++r)
      if (matrix[static_cast<size_t>(r) * nblocks + b] != 0) holders.push_back(r);
    if (holders.empty())
      return Status::InvalidArgument(StrFormat("block %zu of the mask matrix has no holder", b));
    const size_t begin = b * block_size, length = std::min(block_size, count - begin);
    if (!out->empty() && out->back().holders == holders) {
      out->back().length += length;
    } else {
      holder_entries += holders.size();
      SIEVE_RETURN_IF_ERROR(CheckLayoutSize(out->size() + 1, holder_entries));
      out->push_back({begin, length, holders});
    }
  }
  return Status::OK();
}

Status EqualSubnetSegments(size_t count, int nsubnets, int nranks, std::vector<SegmentSpec>* out) {
  out->clear();
  if (nsubnets < 1 || static_cast<size_t>(nsubnets) > count)
    return Status::InvalidArgument(
        StrFormat("nsubnets %d must be in 1..count (%zu)", nsubnets, count));
  SIEVE_RETURN_IF_ERROR(CheckLayoutSize(static_cast<size_t>(nsubnets),
                                        static_cast<size_t>(nsubnets) * static_cast<size_t>(nranks)));
  std::vector<int> everyone(static_cast<size_t>(nranks));
  for (int r = 0; r < nranks; ++r) everyone[r] = r;
  const size_t size = count / static_cast<size_t>(nsubnets);
  for (int k = 0; k < nsubnets; ++k) {
    const size_t begin = size * static_cast<size_t>(k);
    out->push_back({begin, k + 1 == nsubnets ? count - begin : size, everyone});
  }
  return Status::OK();
}

uint64_t LayoutHash(size_t count, const std::vector<SegmentSpec>& segments) {
  uint64_t h = Mix64(count ^ 0x5355424e4554ull);  // "SUBNET"
  for (const SegmentSpec& s : segments) {
    h = Mix64(h ^ Mix64(s.offset + 0x9e3779b97f4a7c15ull));
    h = Mix64(h ^ Mix64(s.length));
    h = Mix64(h ^ Mix64(s.holders.size() * 0x632be59bd9b4e019ull));
    for (int r : s.holders) h = Mix64(h ^ static_cast<uint64_t>(r));
  }
  return h;
}

Status Register(Comm& comm, size_t count, std::vector<SegmentSpec> segments, Status local,
                std::shared_ptr<LayoutState>* out) {
  if (local.ok()) local = ValidateSegments(count, segments, comm.size());
  const uint64_t hash = local.ok() ? LayoutHash(count, segments) : 0;
  Status agreed =
      comm.size() > 1 ? Agree(comm, local.ok(), count, segments.size(), hash) : Status::OK();
  SIEVE_RETURN_IF_ERROR(local);  // this rank's own reason first; the others were told
  SIEVE_RETURN_IF_ERROR(agreed);

  auto state = std::make_shared<LayoutState>();
  state->comm_serial = comm.serial();
  state->count = count;
  state->hash = hash;
  std::vector<SegmentRole> roles(segments.size());
  for (size_t k = 0; k < segments.size(); ++k) {
    state->offsets.push_back(segments[k].offset);
    roles[k].senders = segments[k].holders;  // SDP: every holder contributes
    state->holders.push_back(std::move(segments[k].holders));
  }
  state->offsets.push_back(count);
  state->sdp_plan = std::make_shared<const Plan>(GroupSegments(state->offsets, roles));
  *out = std::move(state);
  return Status::OK();
}

}  // namespace sieve::subnet
