// Property: every public call, with any argument, either succeeds with the reference's result
// or fails on every rank with a message naming it (and never crashes or blocks past
// SIEVE_TIMEOUT + 2 s). Each case is a program of tests/fuzz/api_sequence.h on 2 in-process
// ranks, judged by its oracle:
//  * every perturbation of every call on all ranks alike (bad enums, NULL pointers and
//    handles, huge counts, another op/root/kind, in place): one program per call, the
//    communicator kept between refusals, as sieve.h promises;
//  * every perturbation of every call on one rank only: a fresh communicator per case (a rank
//    that disagrees makes the communicator unusable);
//  * the misuses of issue 22 (count 0 on one rank, overlapping buffers, sizes near SIZE_MAX,
//    destroyed handles, mixed mask policies, destroy inside an open group, stale messages) and
//    a refused grouped receive: one case each.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "fuzz/api_sequence.h"
#include "sieve.h"

namespace sieve_fuzz {
namespace {

constexpr int kRanks = 2;

// A call to test: a kind, and for the kinds with a quantized flavour (api_sequence.h: variant
// bits 2-3) which one: 0 the plain call, else the ...Quantized call at the variant's level.
struct Case {
  Kind kind;
  int levels_pick = 0;
};

bool TakesLevels(const Case& c) {
  return c.kind == Kind::kReduceScatterQuantized || c.levels_pick != 0;
}

// The perturbations that change what the call is made with.
bool Relevant(const Case& c, Bad b) {
  const Kind k = c.kind;
  const bool dense = k <= Kind::kReduceScatter;
  // The newer calls with their own arguments: sharded and top-k.
  const bool sharded = k == Kind::kReduceScatterQuantized || k == Kind::kAllGatherQuantized ||
                       k == Kind::kTopK;
  const bool reduces = k == Kind::kAllReduce || k == Kind::kReduce || k == Kind::kReduceScatter ||
                       k == Kind::kReduceScatterQuantized || k == Kind::kTopK;
  const bool rooted = k == Kind::kBroadcast || k == Kind::kReduce;
  const bool buffers = dense || sharded || k == Kind::kMasked || k == Kind::kTernary ||
                       k == Kind::kSubnet || k == Kind::kD2ft;
  const bool philox = k == Kind::kTernary || k == Kind::kReduceScatterQuantized ||
                      (TakesLevels(c) && k == Kind::kSubnet);
  switch (b) {
    case Bad::kNone: return false;
    case Bad::kCountZero: case Bad::kCountPlusOne: case Bad::kCountHuge:
      return buffers || k == Kind::kSendRecv || k == Kind::kMaskRegister ||
             k == Kind::kLayoutEqual || k == Kind::kLayoutRegister;
    case Bad::kDtypeOther: return buffers || k == Kind::kSendRecv;
    case Bad::kDtypeInvalid: return buffers || k == Kind::kSendRecv || k == Kind::kMaskRegister;
    case Bad::kOpOther: return reduces || k == Kind::kMasked || k == Kind::kTernary;
    case Bad::kOpInvalid:
      return reduces || k == Kind::kMasked || k == Kind::kTernary ||
             k == Kind::kMaskRegister || k == Kind::kLayoutEqual;
    // Quantized and top-k calls: another level count (bit width, fraction), or one out of
    // range.
    case Bad::kRootOther:
      return rooted || k == Kind::kSendRecv || k == Kind::kSplit || TakesLevels(c) || sharded;
    case Bad::kRootInvalid:
      return rooted || k == Kind::kSendRecv || k == Kind::kSplit || k == Kind::kLayoutRegister ||
             TakesLevels(c) || sharded;
    case Bad::kSendNull:
      return buffers || k == Kind::kSendRecv || k == Kind::kMaskRegister ||
             k == Kind::kLayoutRegister;
    case Bad::kRecvNull: return buffers || k == Kind::kSendRecv;
    case Bad::kCommNull: return k != Kind::kGroup && k != Kind::kDeregister;
    case Bad::kInPlace: case Bad::kOverlap: return buffers;
    case Bad::kKindOther: return dense;
    case Bad::kSeedOther: case Bad::kBlockOther: case Bad::kBlockHuge:
      return philox || (TakesLevels(c) && k == Kind::kD2ft);
    case Bad::kParamsNull: return philox || k == Kind::kD2ft;
    case Bad::kBitsOther:
      return k == Kind::kMaskRegister || k == Kind::kLayoutRegister || k == Kind::kD2ft;
    case Bad::kPolicyOther: return k == Kind::kMaskRegister;
    case Bad::kHandleNull:
      return k == Kind::kMasked || k == Kind::kTernary || k == Kind::kSubnet ||
             k == Kind::kD2ft || k == Kind::kDeregister || k == Kind::kQuery;
    case Bad::kOutNull:
      return k == Kind::kMaskRegister || k == Kind::kLayoutEqual ||
             k == Kind::kLayoutRegister || k == Kind::kSplit || k == Kind::kQuery;
    default: return false;
  }
}

// A valid call of `kind` (over slot 0's mask or layout where it needs one); variant bits 2-3
// are the case's quantized flavour, not the caller's.
Step Good(const Case& c, uint64_t seed, int variant = 0) {
  const Kind kind = c.kind;
  Step s;
  s.kind = kind;
  s.count = 37;  // odd, several ring chunks of small messages
  s.dtype = sieveFloat32;
  s.op = sieveSum;
  s.root = 1;
  s.seed = seed;
  s.variant = variant;
  if (kind == Kind::kTernary || kind == Kind::kSubnet || kind == Kind::kD2ft ||
      kind == Kind::kReduceScatterQuantized)
    s.variant = (variant & ~12) | c.levels_pick << 2;
  if (kind == Kind::kTernary || kind == Kind::kReduceScatterQuantized) s.block = 7;
  if (kind == Kind::kTernary) s.variant |= 1;  // over the mask
  if ((kind == Kind::kSubnet || kind == Kind::kD2ft) && c.levels_pick != 0) {
    s.dtype = 0;  // float32 of the subnet kinds' datatypes (api_sequence.cc)
    s.block = 7;
  }
  if (kind == Kind::kLayoutEqual) s.block = 3;
  if (kind == Kind::kLayoutRegister) s.block = 3;
  return s;
}
Step Good(Kind kind, uint64_t seed, int variant = 0) { return Good(Case{kind}, seed, variant); }

// What `kind` needs registered first (slot 0), as steps.
std::vector<Step> Prerequisites(Kind kind, uint64_t seed) {
  std::vector<Step> out;
  if (kind == Kind::kMasked || kind == Kind::kTernary || kind == Kind::kQuery ||
      kind == Kind::kDeregister)
    out.push_back(Good(Kind::kMaskRegister, seed));
  if (kind == Kind::kSubnet || kind == Kind::kD2ft || kind == Kind::kQuery ||
      kind == Kind::kDeregister)
    out.push_back(Good(Kind::kLayoutRegister, seed + 1));
  return out;
}

const Case kCases[] = {{Kind::kAllReduce}, {Kind::kBroadcast}, {Kind::kReduce},
                       {Kind::kAllGather}, {Kind::kReduceScatter}, {Kind::kSendRecv},
                       {Kind::kMaskRegister}, {Kind::kMasked}, {Kind::kTernary},
                       {Kind::kTernary, 2},  // sieveAllReduceQuantized, L = 7
                       {Kind::kLayoutEqual}, {Kind::kLayoutRegister}, {Kind::kSubnet},
                       {Kind::kSubnet, 2},   // sieveAllReduceSubnetQuantized, L = 3
                       {Kind::kD2ft},
                       {Kind::kD2ft, 1},     // sieveAllReduceD2ftQuantized, L = 1
                       {Kind::kDeregister}, {Kind::kSplit}, {Kind::kQuery},
                       {Kind::kReduceScatterQuantized, 1},  // L = 3
                       {Kind::kAllGatherQuantized},
                       {Kind::kTopK}};

// Runs the programs a few at a time (a one-rank difference costs a timeout, spent waiting),
// and reports each one's findings with the program.
// A program whose init failed on every rank (allowed, under load) is run again: each case
// must be tested.
void RunAll(const std::vector<Program>& programs) {
  std::atomic<size_t> next{0};
  std::vector<std::vector<std::string>> results(programs.size());
  std::vector<std::thread> workers;
  for (int w = 0; w < 8; ++w)
    workers.emplace_back([&] {
      for (size_t i = next++; i < programs.size(); i = next++) {
        bool tested = false;
        for (int attempt = 0; attempt < 5 && !tested; ++attempt)
          results[i] = Run(programs[i], &tested);
        if (!tested) results[i].push_back("init failed on every rank 5 times: untested");
      }
    });
  for (std::thread& t : workers) t.join();
  for (size_t i = 0; i < programs.size(); ++i) {
    std::string all;
    for (const std::string& f : results[i]) all += "  " + f + "\n";
    EXPECT_TRUE(results[i].empty()) << Describe(programs[i]) << all;
  }
}

class ApiProperty : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    // Small, so a rank that waits for a disagreeing peer gives up soon; every call must
    // still return within this + 2 s.
    setenv("SIEVE_TIMEOUT", "1", 1);
  }
};

// Every call with every perturbation on both ranks alike: a refused call leaves the
// communicator working (the next valid call succeeds with the right result), an accepted one
// (another op, root, kind, in place) gives the reference's result.
TEST_F(ApiProperty, EveryCallWithEveryArgumentOnAllRanks) {
  std::vector<Program> programs;
  uint64_t seed = 1;
  for (const Case& c : kCases) {
    Program p;
    p.nranks = kRanks;
    for (int b = 1; b < static_cast<int>(Bad::kNumBad); ++b) {
      Bad bad = static_cast<Bad>(b);
      if (!Relevant(c, bad)) continue;
      for (const Step& pre : Prerequisites(c.kind, ++seed)) p.steps.push_back(pre);
      p.steps.push_back(Good(c, ++seed, b));
      for (const Step& pre : Prerequisites(c.kind, ++seed)) p.steps.push_back(pre);
      Step s = Good(c, ++seed, b);
      s.bad.fill(bad);
      p.steps.push_back(s);
    }
    programs.push_back(p);
  }
  RunAll(programs);
}

// Each case below costs a communicator and a timeout. The quantized calls share the argument
// checks of the plain ones, so only what they add is tested on one rank: for the quantized
// flavours of older kinds, another level count or seed; for the sharded calls, each argument
// that must agree.
bool WorthAFreshCommunicator(const Case& c, Bad b) {
  if (c.kind == Kind::kReduceScatterQuantized || c.kind == Kind::kAllGatherQuantized ||
      c.kind == Kind::kTopK)
    return b == Bad::kCountPlusOne || b == Bad::kDtypeOther || b == Bad::kOpOther ||
           b == Bad::kRootOther || b == Bad::kSeedOther || b == Bad::kBlockOther ||
           b == Bad::kInPlace;
  if (TakesLevels(c)) return b == Bad::kRootOther || b == Bad::kSeedOther;
  return true;
}

// Every call with every perturbation on rank 1 only: fails on both ranks with a message (or,
// for a difference the call allows, such as in place or NULL on a non-root, succeeds).
TEST_F(ApiProperty, EveryCallWithOneRankDifferent) {
  std::vector<Program> programs;
  uint64_t seed = 1000;
  for (const Case& c : kCases) {
    for (int b = 1; b < static_cast<int>(Bad::kNumBad); ++b) {
      Bad bad = static_cast<Bad>(b);
      if (!Relevant(c, bad) || !WorthAFreshCommunicator(c, bad)) continue;
      Program p;
      p.nranks = kRanks;
      p.steps = Prerequisites(c.kind, ++seed);
      Step s = Good(c, ++seed, b);
      s.bad[1] = bad;
      p.steps.push_back(s);
      programs.push_back(p);
    }
  }
  RunAll(programs);
}

Program OneStep(Step s, int nranks = kRanks) {
  Program p;
  p.nranks = nranks;
  p.steps = Prerequisites(s.kind, 77);
  p.steps.push_back(s);
  p.steps.push_back(Good(Kind::kAllReduce, 99));
  return p;
}

TEST_F(ApiProperty, ZeroCountOnOneRankFailsEverywhere) {
  std::vector<Program> programs;
  for (Case c : {Case{Kind::kAllReduce}, Case{Kind::kBroadcast}, Case{Kind::kAllGather},
                 Case{Kind::kReduce}, Case{Kind::kReduceScatter}, Case{Kind::kMasked},
                 Case{Kind::kTernary}, Case{Kind::kTernary, 1}, Case{Kind::kSubnet},
                 Case{Kind::kSubnet, 1}, Case{Kind::kReduceScatterQuantized, 3},
                 Case{Kind::kAllGatherQuantized}, Case{Kind::kTopK}}) {
    Step s = Good(c, 5);
    s.bad[0] = Bad::kCountZero;
    programs.push_back(OneStep(s, 3));
  }
  RunAll(programs);
}

TEST_F(ApiProperty, OverlappingBuffersAreRefused) {
  std::vector<Program> programs;
  for (Case c : {Case{Kind::kAllReduce}, Case{Kind::kReduce}, Case{Kind::kReduceScatter},
                 Case{Kind::kAllGather}, Case{Kind::kMasked}, Case{Kind::kTernary},
                 Case{Kind::kSubnet}, Case{Kind::kReduceScatterQuantized},
                 Case{Kind::kAllGatherQuantized}, Case{Kind::kTopK}}) {
    Step s = Good(c, 6);
    s.bad.fill(Bad::kOverlap);
    programs.push_back(OneStep(s));
  }
  RunAll(programs);
}

TEST_F(ApiProperty, SizesNearSizeMaxAreRefused) {
  Step ternary = Good(Kind::kTernary, 7);
  ternary.bad.fill(Bad::kBlockHuge);
  Step mask = Good(Kind::kMaskRegister, 8);
  mask.bad.fill(Bad::kCountHuge);
  Step layout = Good(Kind::kLayoutEqual, 9);
  layout.bad.fill(Bad::kCountHuge);
  RunAll({OneStep(ternary), OneStep(mask), OneStep(layout)});
}

TEST_F(ApiProperty, DestroyedHandlesAreRefused) {
  Program comm = OneStep(Good(Kind::kAllReduce, 10));
  comm.use_after_destroy = true;
  // Deregister twice: the second call gets a freed handle.
  Program mask;
  mask.nranks = kRanks;
  mask.steps = {Good(Kind::kMaskRegister, 11), Good(Kind::kDeregister, 12),
                Good(Kind::kDeregister, 13), Good(Kind::kAllReduce, 14)};
  Program layout = mask;
  layout.steps[0] = Good(Kind::kLayoutRegister, 15);
  layout.steps[1].variant = layout.steps[2].variant = 1;
  RunAll({comm, mask, layout});
}

TEST_F(ApiProperty, MixedMaskPoliciesFailEverywhere) {
  Step s = Good(Kind::kMaskRegister, 16);
  s.bad[1] = Bad::kPolicyOther;
  RunAll({OneStep(s, 3)});
}

TEST_F(ApiProperty, DestroyInsideAnOpenGroup) {
  Program p = OneStep(Good(Kind::kAllReduce, 17));
  p.destroy_in_group = true;
  RunAll({p});
}

TEST_F(ApiProperty, FailedQueriesUpdateTheCommunicatorsMessage) {
  std::vector<Program> programs;
  for (int which = 0; which < 4; ++which) {
    Step s = Good(Kind::kQuery, 18, which);
    s.bad.fill(Bad::kOutNull);
    programs.push_back(OneStep(s));
  }
  RunAll(programs);
}

TEST_F(ApiProperty, RefusedGroupReceiveLeavesNoMessageBehind) {
  Step bad = Good(Kind::kSendRecv, 19);
  bad.bad.fill(Bad::kRecvNull);
  Program p;
  p.nranks = kRanks;
  p.steps = {bad, Good(Kind::kSendRecv, 20)};
  RunAll({p});
}

}  // namespace
}  // namespace sieve_fuzz
