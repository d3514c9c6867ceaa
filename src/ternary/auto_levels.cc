// Auto levels: measure, agree every so often, choose (plan/compression_choice.h), run.
#include "ternary/auto_levels.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <limits>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "coll/collectives.h"
#include "core/log.h"
#include "kernels/reduce.h"
#include "kernels/ternary.h"
#include "plan/algo_choice.h"
#include "plan/compression_choice.h"
#include "plan/link_model.h"
#include "plan/link_probe.h"
#include "plan/link_rate.h"

namespace sieve::ternary {

namespace {

using Clock = std::chrono::steady_clock;

// Agreements at the first kEarlyAgreements auto calls (the first dense calls
// measure the link) and every kAgreeEvery-th after.
constexpr uint64_t kEarlyAgreements = 4;
constexpr uint64_t kAgreeEvery = 16;
// Elements of the one-time kernel measurement (128 KiB of float32), best of kRuns.
constexpr size_t kProbeElements = 1 << 15;
constexpr int kRuns = 3;

// The running estimate after a new sample (recent calls weigh most).
double Blend(double old, double sample) { return old > 0 ? 0.5 * (old + sample) : sample; }

double Since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

struct AutoState {
  std::mutex mu;  // the test hook may write from another thread than the calls'
  bool kernels_measured = false;
  bool injected = false;
  bool agree_next = false;                 // agree at the next call (test hook, exploration)
  AutoMeasurements local;                  // this rank's
  AutoMeasurements agreed;                 // every rank's, as of the last agreement
  uint64_t calls = 0;                      // auto calls of kMinAutoElements or more
  double explore_budget = 0;               // plan::AccrueExploration's, the same on every rank
  int explorations = 0;                    // dense calls that measured the rate (agreed)
  std::map<size_t, int> last_by_elements;  // for the INFO line on a switch
  std::atomic<int> last_levels{-1};
};

// The quantized path's kernels over kProbeElements at L levels (abs-max, quantize
// and pack, unpack, pack at the final sums' width, unpack, dequantize: what a ring
// pass does per element), the best of kRuns, so a descheduled run does not count.
double ProbeCodec(int nranks, int levels, const std::vector<float>& g) {
  using namespace kernels;
  const size_t e = g.size(), block = 2048;
  std::vector<float> out(e), scales((e + block - 1) / block);
  const TernaryWork wt = TernaryWorkFor(nranks, levels);
  const int w1 = TernaryBits(levels), wn = TernaryBits(nranks * levels);
  std::vector<uint8_t> wire(TernaryPackedBytes(e, wn)), work(e * static_cast<size_t>(wt));
  double best = 1e30;
  for (int run = 0; run < kRuns; ++run) {
    const Clock::time_point t0 = Clock::now();
    TernarySource src = TernarySourceOf(DType::kFloat32, g.data(), nullptr, block, nullptr);
    src.levels = levels;
    TernaryAbsMax(src, e, scales.data());
    src.scales = scales.data();
    TernaryQuantizePack(src, 0, e, w1, wire.data());
    TernaryUnpack(wt, wire.data(), e, w1, false, work.data());
    TernaryPack(wt, work.data(), e, wn, wire.data());
    TernaryUnpack(wt, wire.data(), e, wn, false, work.data());
    TernaryDequantize(DType::kFloat32, wt, work.data(), e, block, scales.data(), nranks * levels,
                      out.data());
    best = std::min(best, Since(t0));
  }
  return best / static_cast<double>(e);
}

// This rank's kernels: the codec at every auto level and the dense reduction.
void MeasureKernels(int nranks, AutoMeasurements* m) {
  std::vector<float> g(kProbeElements), out(kProbeElements);
  for (size_t i = 0; i < g.size(); ++i)
    g[i] = static_cast<float>((i * 2654435761u) % 1000) - 500.0f;
  m->codec_s_per_element = ProbeCodec(nranks, 1, g);
  for (int i = 0; i < plan::kNumAutoLevels; ++i)
    m->codec_factor[i] = ProbeCodec(nranks, plan::kAutoLevels[i], g) / m->codec_s_per_element;
  double dense = 1e30;
  for (int run = 0; run < kRuns; ++run) {
    const Clock::time_point t0 = Clock::now();
    kernels::Reduce(kernels::DType::kFloat32, kernels::RedOp::kSum, g.data(), out.data(),
                    out.data(), g.size());
    dense = std::min(dense, Since(t0));
  }
  m->dense_s_per_element = dense / static_cast<double>(g.size());
}

// Learns from a call that sent `sent` bytes in `seconds`. A dense call feeds the
// communicator's rate learner (plan/link_rate.h; a quantized call fed it itself, in
// ternary/ternary_allreduce.cc); a quantized one, with a rate (stated, else the learned
// bound, which makes the wire's share look larger and so the kernels cheaper: the error
// leans toward compression), its kernels' real cost per element, waits for slower ranks
// included (the one-time measurement is one rank's kernels on a small buffer in cache;
// the call's are not). What the call spent waiting for its peers to arrive (`peer_wait`
// beyond one delay: a peer still computing, or descheduled) is not the kernels' cost:
// a dense call would have waited as long. Counted in, one late peer made a 4M-element
// call look 20x slower to encode and turned auto to dense for good.
void Observe(Comm& comm, AutoState& s, double rate, int levels, size_t elements,
             size_t element_bytes, uint64_t sent, double seconds, double peer_wait) {
  if (levels == plan::kAutoDense) {
    if (comm.config().link_rate > 0) return;
    // The flat rule the dense (or masked) all-reduce took; a hierarchical run crossed
    // shared memory too (one_kind_of_link).
    const algo::AllReduceRun run =
        plan::FlatRun(comm, plan::ChooseDenseFlat(comm, elements * element_bytes).algo,
                      comm.config().segment_bytes);
    plan::RateSample sample;
    sample.algo = run.algo;
    sample.nranks = comm.size();
    sample.segment_bytes = run.segment_bytes;
    sample.one_kind_of_link = comm.hosts().nhosts == 1 || comm.hosts().nhosts == comm.size();
    sample.sent = sent;
    sample.seconds = seconds;
    sample.one_way_s = comm.link_rtt_s() / 2;
    comm.State<plan::LinkRate>().Offer(plan::RateBoundOf(sample));
    return;
  }
  if (s.injected || sent < plan::kMinRateSampleBytes || !(rate > 0)) return;
  const double e = static_cast<double>(elements);
  const double latency = (comm.size() - 1) * comm.link_rtt_s();
  const double late_peers = std::max(0.0, peer_wait - comm.link_rtt_s() / 2);
  const double kernels_s = seconds - late_peers - static_cast<double>(sent) / rate - latency;
  const int i = plan::AutoLevelIndex(levels);
  const double factor = i >= 0 ? s.local.codec_factor[i] : 1.0;
  if (kernels_s > 0)
    s.local.codec_s_per_element = Blend(s.local.codec_s_per_element, kernels_s / e / factor);
}

// 1/x with 0 for "none": `none` says which way the max of the agreement should lean.
double Inverse(double x, double none) { return x > 0 ? 1.0 / x : none; }
double FromInverse(double v) { return v > 0 && std::isfinite(v) ? 1.0 / v : 0.0; }

// Every rank's inputs become the slowest rank's: max of 1/stated rate (0: not stated,
// so a rank that states it decides), of 1/the learner's proposal (infinite: none, so a
// rank without one makes it none: plan::AgreedBound's rule), of each cost per element and
// of each factor. The agreed bound goes to the communicator's rate learner.
Status Agree(Comm& comm, AutoState& s) {
  constexpr int kFixed = 4;
  plan::LinkRate& learner = comm.State<plan::LinkRate>();
  double v[kFixed + plan::kNumAutoLevels] = {
      Inverse(s.local.rate_Bps, 0.0),
      Inverse(learner.proposal(), std::numeric_limits<double>::infinity()),
      s.local.codec_s_per_element, s.local.dense_s_per_element};
  std::copy(s.local.codec_factor, s.local.codec_factor + plan::kNumAutoLevels, v + kFixed);
  coll::CollArgs a;
  a.send = v;
  a.recv = v;
  a.count = kFixed + plan::kNumAutoLevels;
  a.dtype = kernels::DType::kFloat64;
  a.op = kernels::RedOp::kMax;
  SIEVE_RETURN_IF_ERROR(coll::AllReduce(comm, a).WithContext("auto levels: agreeing on inputs"));
  s.agreed.rate_Bps = FromInverse(v[0]);
  learner.Agreed(FromInverse(v[1]));
  s.agreed.codec_s_per_element = v[2];
  s.agreed.dense_s_per_element = v[3];
  std::copy(v + kFixed, v + kFixed + plan::kNumAutoLevels, s.agreed.codec_factor);
  return Status::OK();
}

}  // namespace

Status RunWithAutoLevels(Comm& comm, size_t elements, kernels::DType dtype, size_t block,
                         const LevelsRun& run) {
  AutoState& s = comm.State<AutoState>();
  std::unique_lock<std::mutex> lock(s.mu);
  plan::CompressionInputs in;
  in.nranks = comm.size();
  in.elements = elements;
  in.element_bytes = kernels::DTypeSize(dtype);
  in.block = block;
  if (elements >= plan::kMinAutoElements && comm.size() > 1) {
    if (!s.kernels_measured && !s.injected) MeasureKernels(comm.size(), &s.local);
    s.kernels_measured = true;
    if (!s.injected && comm.config().link_rate > 0)
      s.local.rate_Bps = static_cast<double>(comm.config().link_rate);
    const uint64_t call = s.calls++;
    if (call < kEarlyAgreements || call % kAgreeEvery == 0 || s.agree_next)
      SIEVE_RETURN_IF_ERROR(Agree(comm, s));
    s.agree_next = false;
    in.link = plan::LinkOf(comm);
    in.link.rate_Bps = s.agreed.rate_Bps;
    in.rate_lower_Bps = comm.State<plan::LinkRate>().rate();
    in.explore_bytes = s.explore_budget;
    in.explorations = s.explorations;
    in.codec_s_per_element = s.agreed.codec_s_per_element;
    in.dense_s_per_element = s.agreed.dense_s_per_element;
    std::copy(s.agreed.codec_factor, s.agreed.codec_factor + plan::kNumAutoLevels, in.codec_factor);
  }
  const plan::CompressionChoice choice = plan::ChooseCompression(in);
  if (in.elements >= plan::kMinAutoElements && in.nranks > 1) {
    s.explore_budget = plan::AccrueExploration(s.explore_budget, in, choice);
    // The rate it measures counts from the next call on, not from the next scheduled
    // agreement (up to kAgreeEvery calls later, when the budget may have paid for another).
    s.agree_next = s.agree_next || choice.explores;
    s.explorations += choice.explores ? 1 : 0;
  }
  auto [it, first] = s.last_by_elements.emplace(elements, choice.levels);
  if (first || it->second != choice.levels) {
    SIEVE_INFO(kLogColl, "auto: all-reduce of %zu elements: %s%s%s (%s)", elements,
               first ? "" : plan::LevelsName(it->second).c_str(), first ? "" : " -> ",
               plan::LevelsName(choice.levels).c_str(), choice.why.c_str());
    it->second = choice.levels;
  }
  s.last_levels.store(choice.levels);
  const uint64_t sent0 = comm.stats().traffic.sent;
  const double waited0 = comm.stats().peer_wait_s;
  const Clock::time_point t0 = Clock::now();
  lock.unlock();  // the call may take long; the test hook must not wait on it
  SIEVE_RETURN_IF_ERROR(run(choice.levels));
  const double seconds = Since(t0);
  lock.lock();
  const double rate = in.link.rate_Bps > 0 ? in.link.rate_Bps : in.rate_lower_Bps;
  Observe(comm, s, rate, choice.levels, elements, in.element_bytes,
          comm.stats().traffic.sent - sent0, seconds, comm.stats().peer_wait_s - waited0);
  return Status::OK();
}

AutoMeasurements AutoLocalMeasurements(Comm& comm) {
  AutoState& s = comm.State<AutoState>();
  std::lock_guard<std::mutex> lock(s.mu);
  return s.local;
}

int LastAutoLevels(Comm& comm) { return comm.State<AutoState>().last_levels.load(); }

void SetAutoMeasurementsForTest(Comm& comm, const AutoMeasurements& m) {
  AutoState& s = comm.State<AutoState>();
  std::lock_guard<std::mutex> lock(s.mu);
  s.injected = true;
  s.agree_next = true;
  s.local = m;
}

}  // namespace sieve::ternary
