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
  kTernary,        // over slot's mask when variant is odd
  kLayoutEqual,    // sieveLayoutEqualSubnets(count, block) into slot
  kLayoutRegister, // a random layout (seed) into slot
  kSubnet,         // sieveAllReduceSubnet over slot
  kD2ft,           // sieveAllReduceD2ft over slot; variant odd: with the schedule table
  kDeregister,     // variant even: mask slot, odd: layout slot (local)
  kSplit,          // split (variant: colour pattern), all-reduce on the child, destroy it
  kQuery,          // variant: count, user rank, counters, async error, mask nnz, layout segments
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
  int policy = 0;     // mask policy
  size_t block = 0;   // ternary block_size; kLayoutEqual: nsubnets; kLayoutRegister: segments
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

// Bugs of issue 22 that the fuzzer finds on main and branch `harden` fixes. Until it lands,
// programs avoid them (so CI stays green on main).
enum class KnownBug {
  kZeroCountOneRank,  // item 1: a count-0 call on one rank skips the sequence
  kOverlap,           // item 2: overlapping send and receive buffers accepted
  kDestroyInGroup,    // item 5: destroy/abort with a call queued in an open group
  kHugeSizes,         // item 6: ternary block_size / mask count near SIZE_MAX
  kStaleHandle,       // item 8: a destroyed communicator's handle, deregistered handles reused
  kMixedPolicy,       // item 9: mask policies differing across ranks
  kMessages,          // item 11: a failed call that leaves the communicator's message stale
  kGroupRemnant,      // found here: a group whose receive was refused still sends; the message
                      // later breaks a valid receive, or matches one of its size (wrong data)
  kSubnetEnum,        // found here: sieveAllReduceSubnet/D2ft load an invalid datatype enum
                      // (UBSan: "load of value 4294967295 ... sieveDataType_t", subnet.cc)
};
// SIEVE_FUZZ_KNOWN_BUGS=run exercises all, or a comma list of keys (KnownBugKey) some.
bool Avoided(KnownBug bug);
const char* KnownBugName(KnownBug bug);
const char* KnownBugKey(KnownBug bug);

// Any bytes are a program (missing bytes read as zero); known bugs are left out when avoided.
Program Decode(const uint8_t* data, size_t size);

// Leaves out of a program the perturbations that would run into an avoided known bug.
void Normalize(Program* program);

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
