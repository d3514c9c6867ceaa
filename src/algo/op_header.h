// The two control messages every rank sends every other rank per collective:
//  - the fingerprint (what this rank called at this sequence number: which
//    collective, count, datatype, op, root, algorithm, segment size, mode
//    parameters; for the subnet collectives also the layout and how D2FT
//    learns its bitmaps), sent when the operation starts, so ranks that called
//    different things fail on every rank instead of mixing their data;
//  - the verdict (this rank's data phase succeeded or failed), sent when it
//    ends; a rank reports success only after every live peer said "ok".
// Fixed layout, little-endian, versioned; decoding rejects anything else.
#ifndef SIEVE_ALGO_OP_HEADER_H_
#define SIEVE_ALGO_OP_HEADER_H_

#include <cstddef>
#include <cstdint>
#include <string>

namespace sieve::algo {

// Which collective: core/collectives.def's rows, numbered by their wire byte.
enum class OpKind : uint8_t {
#define SIEVE_COLLECTIVE(name, wire, text, device) k##name = wire,
#include "core/collectives.def"
#undef SIEVE_COLLECTIVE
};
// The row's name ("allreduce", "masked allreduce"); "unknown collective" for other bytes.
const char* OpKindName(OpKind kind);

// kOneShotValues: the one-shot of a quantized all-reduce that sends each rank's values,
// not its codes (ternary/values_codec.h).
enum class OpAlgo : uint8_t { kRing = 1, kTree, kChain, kDirect, kOneShot, kHier, kOneShotValues };
// "ring", "tree", "chain", "direct", "one-shot", "hierarchical", "one-shot of values".
const char* OpAlgoName(OpAlgo algo);

// How a D2FT call learns every rank's touched bitmap: each is a different
// message pattern, so ranks must agree on it.
enum class BitmapSource : uint8_t {
  kNone = 0,          // not a D2FT call
  kGathered,          // all-gather of the touched bitmaps
  kSchedule,          // the caller's schedule table, unchecked
  kScheduleChecked,   // the caller's schedule table, hash-checked (SIEVE_CHECK_SCHEDULE=1)
};

struct OpFingerprint {
  OpKind kind = OpKind::kAllReduce;
  uint8_t dtype = 0xff;  // kernels::DType, 0xff when the collective has none
  uint8_t op = 0xff;     // kernels::RedOp, 0xff when it reduces nothing
  OpAlgo algo = OpAlgo::kRing;
  int32_t root = -1;     // -1 when it has no root
  uint64_t count = 0;
  uint64_t segment_bytes = 0;
  uint64_t mode = 0;     // hash of mode parameters (ternary seed/step/block; subnet layout), 0 for dense
  uint32_t segments = 0;  // subnet layout's number of segments K, 0 for other collectives
  BitmapSource bitmaps = BitmapSource::kNone;
  // Subnet calls: the level count L of a quantized call (its seed, step and block
  // are mixed into `mode` with the layout), 0 for the dense one and other collectives.
  uint8_t levels = 0;
};
// The ternary (and L-level) all-reduce's mode word: block_size exactly in the low
// kTernaryBlockBits bits (the API refuses larger blocks), levels - 1 in the next
// kTernaryLevelBits (levels <= 128), a hash of seed and step above, so a mismatch
// names the field. Ternary is levels 1 (zero bits), so sieveAllReduceTernary and
// sieveAllReduceQuantized with levels 1 agree with each other.
constexpr int kTernaryBlockBits = 35;
constexpr int kTernaryLevelBits = 7;
uint64_t TernaryMode(uint64_t seed, uint64_t step, uint64_t block, int levels = 1);
// A masked quantized call's mode word: TernaryMode with the mask's digest
// (mask::MaskState::digest) mixed into its hash bits (block and levels stay readable).
uint64_t WithMaskDigest(uint64_t ternary_mode, uint64_t digest);
// The masked all-reduce's mode word: the mask's kept elements (nnz < 2^32) in the
// low 32 bits, the high half of its digest above, so a mismatch names the kept
// count, or says that the same count keeps different elements.
uint64_t MaskedMode(uint64_t nnz, uint64_t digest);

bool operator==(const OpFingerprint& a, const OpFingerprint& b);
inline bool operator!=(const OpFingerprint& a, const OpFingerprint& b) { return !(a == b); }

// "allreduce(count 1000, float32, sum, ring)".
std::string DescribeFingerprint(const OpFingerprint& fp);
// "count 1000 here, 2000 on rank 3; op sum here, max on rank 3" — the fields that differ.
std::string FingerprintDiff(const OpFingerprint& mine, const OpFingerprint& theirs, int rank);

constexpr size_t kFingerprintBytes = 48;
constexpr size_t kVerdictBytes = 12;

void EncodeFingerprint(uint32_t seq, const OpFingerprint& fp, uint8_t out[kFingerprintBytes]);
// False when the bytes are not a version-1 fingerprint (wrong length, magic or version).
bool DecodeFingerprint(const uint8_t* in, size_t len, uint32_t* seq, OpFingerprint* fp);

void EncodeVerdict(uint32_t seq, bool ok, uint8_t out[kVerdictBytes]);
bool DecodeVerdict(const uint8_t* in, size_t len, uint32_t* seq, bool* ok);

}  // namespace sieve::algo

#endif  // SIEVE_ALGO_OP_HEADER_H_
