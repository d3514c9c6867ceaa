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
  state->comm_serial = comm.serial();
  state->count = count;
  state->bits = std::move(bits);
  SIEVE_RETURN_IF_ERROR(AgreeOnMask(comm, Policy::kUnion, count, &state->bits));
  SIEVE_RETURN_IF_ERROR(BuildIndex(state->bits, count, &state->idx));
  state->digest = MaskHash(count, state->bits);
  SIEVE_INFO(kLogColl, "mask tracker: buffer of %zu elements masked (%zu kept)", count,
             state->idx.size());
  e->mask = std::move(state);
  return Status::OK();
}

}  // namespace

Status ExactStep(Comm& comm, const coll::CollArgs& a, MaskState* mask) {
  return mask != nullptr ? AllReduceMasked(comm, a, *mask) : coll::AllReduce(comm, a);
}

Status TrackedAllReduce(Comm& comm, const coll::CollArgs& a, const DataStep& step) {
  const Config& config = comm.config();
  if (a.count < kMinTrackedElements) return step(comm, a, nullptr);
  Entry& e = comm.State<Tracker>()
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
      return step(comm, a, nullptr);
    case TrackedStep::kMasked:
      return step(comm, a, e.mask.get());
    case TrackedStep::kStrayed:  // exact dense step, then relearn
      ++comm.stats().dense_fallbacks;
      SIEVE_INFO(kLogColl, "mask tracker: a non-zero outside the mask; step done dense");
      e = Entry();
      return step(comm, a, nullptr);
    case TrackedStep::kLearning:
      return step(comm, a, nullptr);
    case TrackedStep::kStartMasking:
      break;
  }
  SIEVE_RETURN_IF_ERROR(step(comm, a, nullptr));
  return StartMasking(comm, a.count, std::move(bits), &e);
}

}  // namespace sieve::mask
