// The stream-ordering plan: exact order for a small case, invariants for many.
#include <gtest/gtest.h>

#include <map>
#include <numeric>
#include <random>

#include "gpu/stream_plan.h"

namespace {

using sieve::gpu::PlanStream;
using sieve::gpu::StreamStep;
using K = sieve::gpu::StreamStepKind;

std::string Render(const std::vector<StreamStep>& steps) {
  static const char* names[] = {"in", "ready", "wait", "out", "freed"};
  std::string s;
  for (const StreamStep& st : steps)
    s += std::string(names[static_cast<int>(st.kind)]) + std::to_string(st.chunk) + "@" +
         std::to_string(st.slot) + " ";
  return s;
}

TEST(PlanStream, FiveChunksOverTwoSlots) {
  EXPECT_EQ(Render(PlanStream(5, 2)),
            "in0@0 ready0@0 in1@1 ready1@1 "
            "wait0@0 out0@0 in2@0 ready2@0 "
            "wait1@1 out1@1 in3@1 ready3@1 "
            "wait2@0 out2@0 in4@0 ready4@0 "
            "wait3@1 out3@1 freed3@1 "
            "wait4@0 out4@0 freed4@0 ");
  EXPECT_TRUE(PlanStream(0, 4).empty());
  EXPECT_EQ(Render(PlanStream(1, 4)), "in0@0 ready0@0 wait0@0 out0@0 freed0@0 ");
}

// For every (chunks, slots): each chunk goes in -> ready -> wait -> out; a slot
// is staged again only after its previous chunk was copied out; each slot
// used is freed exactly once, after its last copy out; waits are in order.
TEST(PlanStream, InvariantsHoldForManyShapes) {
  for (size_t chunks = 1; chunks <= 23; ++chunks) {
    for (size_t slots = 1; slots <= 6; ++slots) {
      std::vector<StreamStep> steps = PlanStream(chunks, slots);
      SCOPED_TRACE(Render(steps));
      std::map<size_t, int> phase;              // chunk -> next expected kind
      std::map<size_t, long> slot_holder;       // slot -> chunk staged, -1 when empty
      std::map<size_t, int> freed;
      size_t next_wait = 0;
      for (const StreamStep& st : steps) {
        ASSERT_LT(st.slot, std::min(slots, chunks));
        ASSERT_EQ(st.slot, st.chunk % std::min(slots, chunks));
        int k = static_cast<int>(st.kind);
        if (st.kind == K::kSignalFreed) {
          ASSERT_EQ(phase[st.chunk], 4);
          ASSERT_EQ(slot_holder[st.slot], -1);
          ++freed[st.slot];
          continue;
        }
        ASSERT_EQ(phase[st.chunk], k) << "chunk " << st.chunk;
        phase[st.chunk] = k + 1;
        if (st.kind == K::kCopyIn) {
          ASSERT_TRUE(slot_holder.count(st.slot) == 0 || slot_holder[st.slot] == -1)
              << "slot " << st.slot << " restaged before it was copied out";
          slot_holder[st.slot] = static_cast<long>(st.chunk);
        }
        if (st.kind == K::kWaitDone) {
          ASSERT_EQ(st.chunk, next_wait++);
        }
        if (st.kind == K::kCopyOut) slot_holder[st.slot] = -1;
      }
      for (size_t c = 0; c < chunks; ++c) ASSERT_EQ(phase[c], 4) << "chunk " << c;
      ASSERT_EQ(freed.size(), std::min(slots, chunks));
      for (auto& f : freed) ASSERT_EQ(f.second, 1);
      // Pipelining: with 2+ slots, chunk 1 is staged before chunk 0 is waited on.
      if (slots >= 2 && chunks >= 2) {
        auto pos = [&](K kind, size_t chunk) {
          for (size_t i = 0; i < steps.size(); ++i)
            if (steps[i].kind == kind && steps[i].chunk == chunk) return i;
          return steps.size();
        };
        ASSERT_LT(pos(K::kSignalReady, 1), pos(K::kWaitDone, 0));
      }
    }
  }
}

TEST(SplitEven, CoversTheCountInNearEqualPieces) {
  std::mt19937 rng(7);
  for (int t = 0; t < 500; ++t) {
    size_t count = rng() % 100003, max = 1 + rng() % 5000;
    std::vector<size_t> pieces = sieve::gpu::SplitEven(count, max);
    ASSERT_EQ(std::accumulate(pieces.begin(), pieces.end(), size_t{0}), count);
    ASSERT_EQ(pieces.size(), (count + max - 1) / max);
    for (size_t p : pieces) {
      ASSERT_LE(p, max);
      ASSERT_GE(p + 1, pieces[0]);
      ASSERT_GE(p, 1u);
    }
  }
  EXPECT_TRUE(sieve::gpu::SplitEven(0, 8).empty());
  EXPECT_EQ(sieve::gpu::SplitEven(7, 0).size(), 7u);  // 0 means 1 element per piece
}

}  // namespace
