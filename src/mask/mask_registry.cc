// Mask registration: normalize, agree by an all-gathered (count, hash) pair of
// 16 bytes per rank, OR the bitmaps only when the union policy needs it.
#include "mask/mask_registry.h"

#include <string>

#include "algo/ring.h"
#include "algo/ring_pattern.h"
#include "coll/collectives.h"
#include "mask/mask_agreement.h"
#include "mask/or_codec.h"
#include "topo/machine.h"

namespace sieve::mask {
namespace {

Status OrAllReduce(Comm& comm, std::vector<uint64_t>* bits) {
  if (bits->empty()) return Status::OK();
  uint32_t seq = comm.NextSeq();
  ++comm.stats().collectives;
  algo::OpFingerprint fp;
  fp.kind = algo::OpKind::kMaskUnion;
  fp.count = bits->size();
  algo::Channel ch = comm.MakeChannel(fp, seq);
  OrCodec codec(bits->data());
  algo::RingOptions options;
  options.segment_bytes = comm.config().segment_bytes;
  return ch.Conclude(
      algo::RunRing(ch, codec, algo::BalancedSplit(bits->size(), comm.size()), options));
}

const char* PolicyName(Policy p) { return p == Policy::kStrict ? "sieveMaskStrict" : "sieveMaskUnion"; }

}  // namespace

char* MaskState::Work(size_t bytes) {
  if (bytes > work_bytes) {
    constexpr size_t kPage = 4096;
    work = AllocateAligned<char>(kPage, bytes);
    work_bytes = bytes;
    if (comm != nullptr)
      topo::BindArea(work.get(), AlignedBytes(kPage, bytes), comm->placement().numa);
  }
  return work.get();
}

void MaskState::BuildPackedView() {
  const size_t nnz = idx.size();
  if (packed_idx.size() == nnz) return;
  packed_idx.resize(nnz);
  for (size_t k = 0; k < nnz; ++k) packed_idx[k] = static_cast<uint32_t>(k);
  packed_bits.assign((nnz + 63) / 64, ~uint64_t{0});
  if (nnz % 64 != 0) packed_bits.back() = (uint64_t{1} << (nnz % 64)) - 1;  // bits past nnz clear
}

Status AgreeOnMask(Comm& comm, Policy policy, size_t count, std::vector<uint64_t>* bits) {
  const int n = comm.size();
  if (n == 1) return Status::OK();
  // The policy is agreed on too: a union rank would otherwise run an OR the others never join.
  const uint64_t mine[kMaskDigestWords] = {count, static_cast<uint64_t>(policy),
                                           MaskHash(count, *bits)};
  std::vector<uint64_t> all;
  SIEVE_RETURN_IF_ERROR(coll::AllGatherWords(comm, mine, kMaskDigestWords, &all));
  MaskVerdict verdict = CompareMaskDigests(all.data(), n);
  if (verdict.kind == MaskVerdict::kSame) return Status::OK();
  ++comm.stats().mask_mismatches;
  if (verdict.kind == MaskVerdict::kCountDiffers) {
    return Status::InvalidUsage(StrFormat(
        "count differs across ranks: rank 0 passed %llu, rank(s) %s passed "
        "another count", static_cast<unsigned long long>(all[0]), verdict.ranks.c_str()));
  }
  if (verdict.kind == MaskVerdict::kPolicyDiffers) {
    return Status::InvalidUsage(StrFormat(
        "policy differs across ranks: rank 0 passed %s, rank(s) %s passed %s",
        PolicyName(static_cast<Policy>(all[1])), verdict.ranks.c_str(),
        PolicyName(all[1] == 0 ? Policy::kUnion : Policy::kStrict)));
  }
  if (policy == Policy::kStrict) {
    return Status::InvalidUsage(StrFormat(
        "the mask of rank(s) %s differs from rank 0's (strict policy: every "
        "rank must pass the same mask; sieveMaskUnion agrees on their OR)",
        verdict.ranks.c_str()));
  }
  return OrAllReduce(comm, bits);
}

Status Register(Comm& comm, const void* mask, Format format, size_t count, Policy policy,
                std::shared_ptr<MaskState>* out) {
  auto state = std::make_shared<MaskState>();
  state->comm = &comm;
  state->comm_serial = comm.serial();
  state->count = count;
  Normalize(mask, format, count, &state->bits);
  SIEVE_RETURN_IF_ERROR(AgreeOnMask(comm, policy, count, &state->bits));
  SIEVE_RETURN_IF_ERROR(BuildIndex(state->bits, count, &state->idx));
  state->digest = MaskHash(count, state->bits);
  *out = std::move(state);
  return Status::OK();
}

}  // namespace sieve::mask
