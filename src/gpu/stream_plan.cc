// Stream-ordering plan: enqueue order of copies and handshake operations.
#include "gpu/stream_plan.h"

#include <algorithm>

namespace sieve::gpu {

namespace {

void Stage(std::vector<StreamStep>* steps, size_t chunk, size_t slots) {
  steps->push_back({StreamStepKind::kCopyIn, chunk, chunk % slots, chunk / slots});
  steps->push_back({StreamStepKind::kSignalReady, chunk, chunk % slots, chunk / slots});
}

}  // namespace

std::vector<StreamStep> PlanStream(size_t chunks, size_t slots) {
  std::vector<StreamStep> steps;
  if (chunks == 0) return steps;
  slots = std::max<size_t>(1, std::min(slots, chunks));
  // Fill the pipeline: stage the first `slots` chunks.
  for (size_t i = 0; i < slots; ++i) Stage(&steps, i, slots);
  // Drain in order; each emptied slot takes the next chunk or is freed.
  for (size_t i = 0; i < chunks; ++i) {
    size_t slot = i % slots, use = i / slots;
    steps.push_back({StreamStepKind::kWaitDone, i, slot, use});
    steps.push_back({StreamStepKind::kCopyOut, i, slot, use});
    if (i + slots < chunks)
      Stage(&steps, i + slots, slots);
    else
      steps.push_back({StreamStepKind::kSignalFreed, i, slot, use});
  }
  return steps;
}

std::vector<size_t> SplitEven(size_t count, size_t max_elems) {
  std::vector<size_t> sizes;
  if (count == 0) return sizes;
  max_elems = std::max<size_t>(1, max_elems);
  size_t pieces = count / max_elems + (count % max_elems != 0 ? 1 : 0);  // no overflow
  for (size_t i = 0; i < pieces; ++i) sizes.push_back(count / pieces + (i < count % pieces ? 1 : 0));
  return sizes;
}

}  // namespace sieve::gpu
