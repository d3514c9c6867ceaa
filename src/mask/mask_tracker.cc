// Mask tracker state machine: learning (dense, count stable steps) -> masked
// (masked all-reduce while no rank strays) -> back to learning on a stray.
#include "mask/mask_tracker.h"

#include <map>
#include <memory>
#include <tuple>
#include <vector>

#include "core/log.h"
#include "kernels/nonzero.h"
#include "mask/mask_agreement.h"
#include "mask/mask_bits.h"
#include "mask/mask_registry.h"
#include "mask/masked_allreduce.h"
#include "ternary/masked_ternary.h"

namespace sieve::mask {
namespace {

// Buffers smaller than this stay dense: the flag exchange would cost more than it saves.
constexpr size_t kMinTrackedElements = 4096;

struct Entry {
  uint64_t hash = 0;                // zero-pattern hash of the last step (learning)
  size_t stable = 0;                // consecutive steps with that hash
  std::shared_ptr<MaskState> mask;  // set in masked state
};

using Key = std::tuple<const void*, size_t, int, int>;

struct Tracker {
  std::map<Key, Entry> entries;
};

Tracker& TrackerOf(Comm& comm) {
  std::shared_ptr<void>& slot = comm.mask_tracker_state();
  if (!slot) slot = std::make_shared<Tracker>();
  return *static_cast<Tracker*>(slot.get());
}

// Max over ranks of three flag bytes (a tiny dense all-reduce, counted as traffic).
Status AgreeOnFlags(Comm& comm, uint8_t flags[3]) {
  coll::CollArgs a;
  a.send = flags;
  a.recv = flags;
  a.count = 3;
  a.dtype = kernels::DType::kUint8;
  a.op = kernels::RedOp::kMax;
  return coll::AllReduce(comm, a);
}

// Called after the dense all-reduce of a step on which every rank was stable:
// agree on the union of the non-zero patterns and switch to masked state.
Status StartMasking(Comm& comm, size_t count, std::vector<uint64_t> bits, Entry* e) {
  auto state = std::make_shared<MaskState>();
  state->comm = &comm;
  state->count = count;
  state->bits = std::move(bits);
  SIEVE_RETURN_IF_ERROR(AgreeOnMask(comm, Policy::kUnion, count, &state->bits));
  SIEVE_RETURN_IF_ERROR(BuildIndex(state->bits, count, &state->idx));
  SIEVE_INFO(kLogColl, "mask tracker: buffer of %zu elements masked (%zu kept)", count,
             state->idx.size());
  e->mask = std::move(state);
  return Status::OK();
}

// One data step, dense or masked, exact or ternary.
Status DataStep(Comm& comm, const coll::CollArgs& a, const coll::TernaryArgs* ternary,
                MaskState* mask) {
  if (ternary == nullptr)
    return mask != nullptr ? AllReduceMasked(comm, a, *mask) : coll::AllReduce(comm, a);
  return mask != nullptr ? TernaryAllReduceMasked(comm, *ternary, *mask)
                         : coll::TernaryAllReduce(comm, *ternary);
}

bool TernaryEligible(const coll::CollArgs& a) {
  using kernels::DType;
  using kernels::RedOp;
  return (a.dtype == DType::kFloat32 || a.dtype == DType::kFloat16 ||
          a.dtype == DType::kBfloat16) &&
         (a.op == RedOp::kSum || a.op == RedOp::kAvg);
}

}  // namespace

Status ModeAllReduce(Comm& comm, const coll::CollArgs& a) {
  const Config& config = comm.config();
  const NcclMode mode = comm.serving_nccl() ? config.nccl_mode : NcclMode::kDense;
  bool auto_mask =
      config.auto_mask || mode == NcclMode::kAutoMask || mode == NcclMode::kAutoMaskTernary;
  bool ternary =
      (mode == NcclMode::kTernary || mode == NcclMode::kAutoMaskTernary) && TernaryEligible(a);
  if (!ternary) return auto_mask ? TrackedAllReduce(comm, a) : coll::AllReduce(comm, a);
  coll::TernaryArgs t;
  t.base = a;
  t.seed = config.ternary_seed;
  t.step = comm.NextTernaryStep();
  return auto_mask ? TrackedAllReduce(comm, a, &t) : coll::TernaryAllReduce(comm, t);
}

Status TrackedAllReduce(Comm& comm, const coll::CollArgs& a, const coll::TernaryArgs* ternary) {
  const Config& config = comm.config();
  if (a.count < kMinTrackedElements) return DataStep(comm, a, ternary, nullptr);
  Entry& e = TrackerOf(comm)
                 .entries[Key{a.send, a.count, static_cast<int>(a.dtype), static_cast<int>(a.op)}];
  const size_t esize = kernels::DTypeSize(a.dtype);
  std::vector<uint64_t> bits;
  uint8_t flags[3] = {0, 0, 0};  // in masked state, in learning state, unstable or strayed
  if (e.mask) {
    flags[0] = 1;
    flags[2] = kernels::AnyNonzeroOutside(esize, a.send, e.mask->bits.data(), a.count);
  } else {
    // The pattern is read before the all-reduce (in place overwrites the input).
    flags[1] = 1;
    bits.resize(BitmapWords(a.count));
    kernels::NonzeroBitmap(esize, a.send, a.count, bits.data());
    uint64_t hash = MaskHash(a.count, bits);
    e.stable = hash == e.hash ? e.stable + 1 : 1;
    e.hash = hash;
    flags[2] = e.stable < config.auto_mask_steps;
  }
  SIEVE_RETURN_IF_ERROR(AgreeOnFlags(comm, flags));
  switch (DecideTrackedStep(flags)) {
    case TrackedStep::kDisagree:  // everyone starts over
      SIEVE_WARN("mask tracker: ranks disagree on a buffer's state; relearning it");
      e = Entry();
      return DataStep(comm, a, ternary, nullptr);
    case TrackedStep::kMasked:
      return DataStep(comm, a, ternary, e.mask.get());
    case TrackedStep::kStrayed:  // exact dense step, then relearn
      ++comm.stats().dense_fallbacks;
      SIEVE_INFO(kLogColl, "mask tracker: a non-zero outside the mask; step done dense");
      e = Entry();
      return DataStep(comm, a, ternary, nullptr);
    case TrackedStep::kLearning:
      return DataStep(comm, a, ternary, nullptr);
    case TrackedStep::kStartMasking:
      break;
  }
  SIEVE_RETURN_IF_ERROR(DataStep(comm, a, ternary, nullptr));
  return StartMasking(comm, a.count, std::move(bits), &e);
}

}  // namespace sieve::mask
