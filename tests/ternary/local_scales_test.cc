// The scale agreement with the caller's abs-maxes made piece by piece
// (algo::LocalAbsMax, the masked call's gather): each piece is asked for as far
// as its last block and sent before the next is made, so a peer holds piece 0
// while this rank is still making piece 1 (the gather runs while the first pieces
// travel); the agreed scales are the max over the ranks, as with StartComputed.
// Ranks as threads over the loopback transport.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "api/arg_check.h"
#include "support/mp_harness.h"
#include "support/thread_ranks.h"
#include "ternary/ternary_scales.h"

namespace sieve_test {
namespace {

constexpr int kRanks = 3;
constexpr size_t kElems = 10007, kBlock = 100, kSegments = 4;
constexpr size_t kBlocks = (kElems + kBlock - 1) / kBlock;

// Rank 1 sets it once it has agreed on piece 0; rank 0 makes piece 1 only then.
std::atomic<bool> g_peer_has_piece0{false};
std::vector<size_t> g_asked[kRanks];  // the ends each rank's source was asked for

float AbsMaxOf(int rank, size_t block) {
  return static_cast<float>((block * 7 + static_cast<size_t>(rank) * 13) % 50 + 1);
}

class RecordingAbsMax : public sieve::algo::LocalAbsMax {
 public:
  RecordingAbsMax(int rank, size_t first_piece_end)
      : rank_(rank), first_piece_end_(first_piece_end), made_(kBlocks) {}

  const float* Through(size_t end) override {
    g_asked[rank_].push_back(end);
    if (rank_ == 0 && end > first_piece_end_ && !waited_) {
      waited_ = true;
      const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
      while (!g_peer_has_piece0.load() && std::chrono::steady_clock::now() < give_up)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      saw_peer_ = g_peer_has_piece0.load();
    }
    for (size_t k = made_blocks_; k < std::min(kBlocks, (end + kBlock - 1) / kBlock); ++k)
      made_[k] = AbsMaxOf(rank_, k);
    made_blocks_ = std::max(made_blocks_, std::min(kBlocks, (end + kBlock - 1) / kBlock));
    return made_.data();
  }
  bool saw_peer() const { return saw_peer_; }

 private:
  int rank_;
  size_t first_piece_end_;
  std::vector<float> made_;
  size_t made_blocks_ = 0;
  bool waited_ = false, saw_peer_ = false;
};

int RankFn(int rank, int n, const sieveUniqueId& id) {
  sieveComm_t comm = nullptr;
  RANK_CHECK(InitComm(rank, n, id, &comm) == 0, "%s", sieveGetLastError(nullptr));
  sieve::Comm* impl = nullptr;
  RANK_CHECK(sieve::CheckComm(comm, &impl).ok(), "no communicator");
  sieve::algo::OpFingerprint fp;
  fp.kind = sieve::algo::OpKind::kTernaryAllReduce;
  fp.count = kElems;
  sieve::algo::Channel ch = impl->MakeChannel(fp, impl->NextSeq());
  sieve::algo::ScalePieces pieces =
      sieve::algo::CutScalePieces(kElems, kBlock, {0, kElems}, kSegments);
  const size_t first_piece_end = pieces.runs[0].back().second * kBlock;
  std::vector<float> scales(kBlocks, -1.0f);
  sieve::algo::TernaryScales agreement(ch, pieces, scales.data());
  RecordingAbsMax local(rank, first_piece_end);
  sieve::Status st = agreement.StartComputed(local);
  RANK_CHECK(st.ok(), "start: %s", st.ToString().c_str());
  agreement.Ensure(0, first_piece_end);
  if (rank == 1) g_peer_has_piece0.store(true);
  st = agreement.Finish();
  RANK_CHECK(st.ok(), "finish: %s", st.ToString().c_str());
  st = ch.Conclude(st);
  RANK_CHECK(st.ok(), "verdicts: %s", st.ToString().c_str());
  if (rank == 0) RANK_CHECK(local.saw_peer(), "piece 1 was made before a peer had piece 0");
  for (size_t k = 0; k < kBlocks; ++k) {
    float want = 0;
    for (int r = 0; r < n; ++r) want = std::max(want, AbsMaxOf(r, k));
    RANK_CHECK(scales[k] == want, "block %zu: %g, want %g", k, scales[k], want);
  }
  RANK_CHECK(sieveCommDestroy(comm) == sieveSuccess, "destroy");
  return 0;
}

TEST(LocalAbsMaxTest, EachPieceGoesOutBeforeTheNextIsMade) {
  RankSpec spec;
  spec.nranks = kRanks;
  spec.env = {{"SIEVE_TRANSPORT", "LOOPBACK"}, {"SIEVE_TIMEOUT", "30"}};
  EXPECT_EQ(RunThreadRanks(spec, RankFn), "");
  // Asked for each piece's end in turn (the one-shot's pieces are consecutive runs
  // of blocks), then for every element.
  const sieve::algo::ScalePieces pieces =
      sieve::algo::CutScalePieces(kElems, kBlock, {0, kElems}, kSegments);
  std::vector<size_t> want;
  for (const auto& runs : pieces.runs)
    want.push_back(std::min(runs.back().second * kBlock, kElems));
  want.push_back(kElems);
  ASSERT_GT(want.size(), 2u);
  for (int r = 0; r < kRanks; ++r) EXPECT_EQ(g_asked[r], want) << "rank " << r;
}

}  // namespace
}  // namespace sieve_test
