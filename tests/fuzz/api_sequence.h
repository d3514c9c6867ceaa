// Sequences of public API calls over 2-3 in-process ranks (one thread each), checked against
// the contract of sieve.h: no crash, no call blocked past SIEVE_TIMEOUT + 2 s, and every call
// either succeeds with the reference's result or fails on every rank with a message naming it.
// Shared by the sequence fuzzer (fuzz_api_sequence.cc: any bytes decode to a program) and the
// property test (tests/property: programs written case by case).
//
// Ranks are threads of this process rather than forked processes: libFuzzer sees the coverage
// of every rank (a child's counters never reach the parent), an iteration costs one
// bootstrap + UCX init (tens of ms) instead of a fork and exec of sanitized processes, and a
// crash or sanitizer report in any rank stops the fuzzer on the input that caused it. Steps
// are separated by a barrier, so each step's outcomes are judged together and a rank that
// failed alone can never pair its next call with its peers' current one (the harness stops a
// program at the first step after which any rank's communicator reports an error).
#ifndef SIEVE_TESTS_FUZZ_API_SEQUENCE_H_
#define SIEVE_TESTS_FUZZ_API_SEQUENCE_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace sieve_fuzz {

constexpr int kMaxRanks = 3;
constexpr int kSlots = 2;  // mask and layout handles a program keeps at once (each kind)

enum class Kind : uint8_t {
  // dense: also what a group holds
  kAllReduce, kBroadcast, kReduce, kAllGather, kReduceScatter, kSendRecv,
  kGroup,          // GroupStart, members, GroupEnd
  kMaskRegister,   // into slot
  kMasked,         // sieveAllReduceMasked over slot
  kTernary,        // over slot's mask when variant is odd; variant bits 2-3: sieveAllReduceTernary,
                   // or sieveAllReduceQuantized at L = 3, 7, 127
  kLayoutEqual,    // sieveLayoutEqualSubnets(count, block) into slot
  kLayoutRegister, // a random layout (seed) into slot
  kSubnet,         // sieveAllReduceSubnet over slot; variant bits 2-3: dense, or the
                   // ...Quantized call at L = 1, 3, 7 (kD2ft too), over the mask slot's
                   // mask when policy is 1
  kD2ft,           // sieveAllReduceD2ft over slot; variant odd: with the schedule table
  kDeregister,     // variant even: mask slot, odd: layout slot (local)
  kSplit,          // split (variant: colour pattern), all-reduce on the child, destroy it
  kQuery,          // variant: count, user rank, counters, async error, mask nnz, layout segments
  kReduceScatterQuantized,  // variant bits 2-3: L = 1, 3, 7, 127
  kAllGatherQuantized,      // variant bit 2: 4 bits, else 8
  kTopK,  // sieveAllReduceTopK, no error feedback; variant bits 2-3: fraction .001, .25, .5, 1
  kNumKinds
};

// What one rank does differently from the step (a rank-inconsistent or invalid call).
enum class Bad : uint8_t {
  kNone, kCountZero, kCountPlusOne, kCountHuge, kDtypeOther, kDtypeInvalid, kOpOther,
  kOpInvalid, kRootOther, kRootInvalid, kSendNull, kRecvNull, kCommNull, kInPlace, kOverlap,
  kKindOther, kSeedOther, kBlockOther, kBlockHuge, kParamsNull, kBitsOther, kPolicyOther,
  kHandleNull, kOutNull, kNumBad
};

struct Step {
  Kind kind = Kind::kAllReduce;
  size_t count = 1;
  int dtype = 7;  // sieveFloat32
  int op = 0;     // sieveSum
  int root = 0;
  bool in_place = false;
  uint64_t seed = 1;
  int slot = 0;
  int policy = 0;     // mask policy; quantized subnet calls: 1 passes the slot's mask
  size_t block = 0;   // ternary/quantized block_size; kLayoutEqual: nsubnets; kLayoutRegister: segments
  int variant = 0;
  std::array<Bad, kMaxRanks> bad{};
  std::vector<Step> members;  // kGroup
};

struct Program {
  int nranks = 2;
  std::vector<Step> steps;
  int teardown = 0;               // 0: all destroy, 1: all abort, 2: rank 0 aborts, others destroy
  bool destroy_in_group = false;  // last: a collective queued in a group, destroy, GroupEnd
  bool use_after_destroy = false; // after teardown: sieveCommCount on the freed handle
};

// Any bytes are a program (missing bytes read as zero).
Program Decode(const uint8_t* data, size_t size);

// Runs the program (sets SIEVE_TIMEOUT=1, loopback interfaces, unless already set) and returns
// what broke the contract, one line each; empty when nothing did. A call blocked past
// SIEVE_TIMEOUT + 2 s, or a crash, aborts the process with the program printed. *tested is
// false when init failed on every rank (allowed: the bootstrap root gives up after
// SIEVE_TIMEOUT, which a loaded machine can exceed), so nothing after it ran.
std::vector<std::string> Run(const Program& program, bool* tested = nullptr);

std::string Describe(const Program& program);
const char* KindName(Kind kind);
const char* BadName(Bad bad);

}  // namespace sieve_fuzz

#endif  // SIEVE_TESTS_FUZZ_API_SEQUENCE_H_
