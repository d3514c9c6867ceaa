// Fingerprint and verdict messages: explicit little-endian encoding.
#include "algo/op_header.h"

#include "core/mix64.h"
#include "core/status.h"
#include "kernels/dtype.h"

namespace sieve::algo {

namespace {

constexpr uint32_t kFingerprintMagic = 0x504f5653;  // "SVOP"
constexpr uint32_t kVerdictMagic = 0x44565653;      // "SVVD"
constexpr uint16_t kVersion = 1;

void Put(uint8_t* out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out[i] = static_cast<uint8_t>(v >> (8 * i));
}
uint64_t Get(const uint8_t* in, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v |= static_cast<uint64_t>(in[i]) << (8 * i);
  return v;
}

std::string DTypeText(uint8_t d) {
  return d == 0xff ? "-" : kernels::DTypeName(static_cast<kernels::DType>(d));
}
std::string OpText(uint8_t o) {
  return o == 0xff ? "-" : kernels::RedOpName(static_cast<kernels::RedOp>(o));
}
const char* AlgoText(OpAlgo a) {
  switch (a) {
    case OpAlgo::kRing:
      return "ring";
    case OpAlgo::kTree:
      return "tree";
    case OpAlgo::kChain:
      return "chain";
    case OpAlgo::kDirect:
      return "direct";
    case OpAlgo::kOneShot:
      return "one-shot";
    case OpAlgo::kHier:
      return "hierarchical";
    case OpAlgo::kOneShotValues:
      return "one-shot of values";
  }
  return "?";
}

const char* BitmapText(BitmapSource b) {
  switch (b) {
    case BitmapSource::kNone:
      return "-";
    case BitmapSource::kGathered:
      return "touched bitmaps";
    case BitmapSource::kSchedule:
      return "schedule table";
    case BitmapSource::kScheduleChecked:
      return "schedule table, checked";
  }
  return "?";
}

bool IsSubnet(OpKind kind) {
  return kind == OpKind::kSubnetAllReduce || kind == OpKind::kD2ftAllReduce;
}

// The calls whose mode word is algo::TernaryMode (their codes must add up).
bool IsQuantizedSum(OpKind kind) {
  return kind == OpKind::kTernaryAllReduce || kind == OpKind::kQuantizedReduceScatter;
}

constexpr uint64_t kTernaryBlockMask = (uint64_t{1} << kTernaryBlockBits) - 1;
constexpr uint64_t kTernaryLevelMask = ((uint64_t{1} << kTernaryLevelBits) - 1)
                                       << kTernaryBlockBits;
constexpr uint64_t kTernaryParamMask = kTernaryBlockMask | kTernaryLevelMask;

uint64_t TernaryLevels(uint64_t mode) {
  return ((mode & kTernaryLevelMask) >> kTernaryBlockBits) + 1;
}

}  // namespace

uint64_t TernaryMode(uint64_t seed, uint64_t step, uint64_t block, int levels) {
  uint64_t h = seed * 0x9e3779b97f4a7c15ull;
  h ^= (step + 0x632be59bd9b4e019ull) * 0xbf58476d1ce4e5b9ull;
  h ^= h >> 31;
  const uint64_t l = (static_cast<uint64_t>(levels - 1) << kTernaryBlockBits) & kTernaryLevelMask;
  return (h & ~kTernaryParamMask) | l | (block & kTernaryBlockMask);
}

uint64_t WithMaskDigest(uint64_t ternary_mode, uint64_t digest) {
  return ternary_mode ^ (Mix64(digest) & ~kTernaryParamMask);
}

uint64_t MaskedMode(uint64_t nnz, uint64_t digest) {
  return (digest & ~uint64_t{0xffffffff}) | (nnz & 0xffffffff);
}

const char* OpAlgoName(OpAlgo a) { return AlgoText(a); }

const char* OpKindName(OpKind kind) {
  switch (kind) {
#define SIEVE_COLLECTIVE(name, wire, text, device) \
  case OpKind::k##name:                            \
    return text;
#include "core/collectives.def"
#undef SIEVE_COLLECTIVE
  }
  return "unknown collective";
}

bool operator==(const OpFingerprint& a, const OpFingerprint& b) {
  return a.kind == b.kind && a.dtype == b.dtype && a.op == b.op && a.algo == b.algo &&
         a.root == b.root && a.count == b.count && a.segment_bytes == b.segment_bytes &&
         a.mode == b.mode && a.segments == b.segments && a.bitmaps == b.bitmaps &&
         a.levels == b.levels;
}

std::string DescribeFingerprint(const OpFingerprint& fp) {
  std::string out = StrFormat("%s(count %llu", OpKindName(fp.kind),
                              static_cast<unsigned long long>(fp.count));
  if (fp.dtype != 0xff) out += ", " + DTypeText(fp.dtype);
  if (fp.op != 0xff) out += ", " + OpText(fp.op);
  if (fp.root >= 0) out += StrFormat(", root %d", fp.root);
  if (IsSubnet(fp.kind)) out += StrFormat(", %u segments", fp.segments);
  if (fp.bitmaps != BitmapSource::kNone) out += StrFormat(", %s", BitmapText(fp.bitmaps));
  if (IsQuantizedSum(fp.kind))
    out += StrFormat(", block_size %llu",
                     static_cast<unsigned long long>(fp.mode & kTernaryBlockMask));
  if (fp.kind == OpKind::kQuantizedAllGather)
    out += StrFormat(", bits %llu", static_cast<unsigned long long>(fp.mode));
  if (IsQuantizedSum(fp.kind) && TernaryLevels(fp.mode) > 1)
    out += StrFormat(", levels %llu", static_cast<unsigned long long>(TernaryLevels(fp.mode)));
  if (fp.levels > 0) out += StrFormat(", levels %u", static_cast<unsigned>(fp.levels));
  return out + StrFormat(", %s)", AlgoText(fp.algo));
}

std::string FingerprintDiff(const OpFingerprint& a, const OpFingerprint& b, int rank) {
  std::string out;
  auto add = [&](const char* field, const std::string& mine, const std::string& theirs) {
    if (mine == theirs) return;
    out += StrFormat("%s%s %s here, %s on rank %d", out.empty() ? "" : "; ", field, mine.c_str(),
                     theirs.c_str(), rank);
  };
  add("collective", OpKindName(a.kind), OpKindName(b.kind));
  add("count", std::to_string(a.count), std::to_string(b.count));
  add("datatype", DTypeText(a.dtype), DTypeText(b.dtype));
  add("op", OpText(a.op), OpText(b.op));
  add("root", std::to_string(a.root), std::to_string(b.root));
  add("algorithm (SIEVE_ALGO)", AlgoText(a.algo), AlgoText(b.algo));
  add("segment size (SIEVE_SEGMENT_BYTES)", std::to_string(a.segment_bytes),
      std::to_string(b.segment_bytes));
  add("layout segments", std::to_string(a.segments), std::to_string(b.segments));
  add("D2FT bitmaps (touched or schedule, SIEVE_CHECK_SCHEDULE)", BitmapText(a.bitmaps),
      BitmapText(b.bitmaps));
  add("levels (0: dense)", std::to_string(a.levels), std::to_string(b.levels));
  auto hex = [](uint64_t v) { return StrFormat("%016llx", static_cast<unsigned long long>(v)); };
  if (IsQuantizedSum(a.kind) && a.kind == b.kind) {
    add("block_size", std::to_string(a.mode & kTernaryBlockMask),
        std::to_string(b.mode & kTernaryBlockMask));
    add("levels", std::to_string(TernaryLevels(a.mode)), std::to_string(TernaryLevels(b.mode)));
    add("seed, step or mask (hash)", hex(a.mode & ~kTernaryParamMask),
        hex(b.mode & ~kTernaryParamMask));
    return out;
  }
  if (a.kind == OpKind::kMaskedAllReduce && b.kind == OpKind::kMaskedAllReduce) {
    const uint64_t low = 0xffffffff;
    add("mask (kept elements)", std::to_string(a.mode & low), std::to_string(b.mode & low));
    if ((a.mode & low) == (b.mode & low))
      add("mask (which elements it keeps: hash)", hex(a.mode & ~low), hex(b.mode & ~low));
    return out;
  }
  if (a.kind == OpKind::kQuantizedAllGather && b.kind == OpKind::kQuantizedAllGather) {
    add("bits", std::to_string(a.mode), std::to_string(b.mode));
    return out;
  }
  // Subnet calls hash their layout here (and a quantized one its seed, step and
  // block): another layout of the same count.
  const bool subnet = IsSubnet(a.kind) && IsSubnet(b.kind);
  add(!subnet                           ? "mode parameters"
      : a.levels > 0 && a.levels == b.levels ? "layout, mask or seed, step, block_size (hash)"
                                        : "layout (hash)",
      hex(a.mode), hex(b.mode));
  return out;
}

// | magic 4 | version 2 | bitmaps 1 | levels 1 | seq 4 | kind 1 | dtype 1 | op 1 | algo 1 |
// | root 4 | segments 4 | count 8 | segment_bytes 8 | mode 8 |
// (bitmaps and segments were reserved zeros before the subnet collectives had
// fingerprints; zero still means "not a subnet call"; levels likewise: 0, dense.)
void EncodeFingerprint(uint32_t seq, const OpFingerprint& fp, uint8_t out[kFingerprintBytes]) {
  Put(out, kFingerprintMagic, 4);
  Put(out + 4, kVersion, 2);
  out[6] = static_cast<uint8_t>(fp.bitmaps);
  out[7] = fp.levels;
  Put(out + 8, seq, 4);
  out[12] = static_cast<uint8_t>(fp.kind);
  out[13] = fp.dtype;
  out[14] = fp.op;
  out[15] = static_cast<uint8_t>(fp.algo);
  Put(out + 16, static_cast<uint32_t>(fp.root), 4);
  Put(out + 20, fp.segments, 4);
  Put(out + 24, fp.count, 8);
  Put(out + 32, fp.segment_bytes, 8);
  Put(out + 40, fp.mode, 8);
}

bool DecodeFingerprint(const uint8_t* in, size_t len, uint32_t* seq, OpFingerprint* fp) {
  if (len != kFingerprintBytes || Get(in, 4) != kFingerprintMagic || Get(in + 4, 2) != kVersion)
    return false;
  *seq = static_cast<uint32_t>(Get(in + 8, 4));
  fp->kind = static_cast<OpKind>(in[12]);
  fp->dtype = in[13];
  fp->op = in[14];
  fp->algo = static_cast<OpAlgo>(in[15]);
  fp->bitmaps = static_cast<BitmapSource>(in[6]);
  fp->levels = in[7];
  fp->root = static_cast<int32_t>(static_cast<uint32_t>(Get(in + 16, 4)));
  fp->segments = static_cast<uint32_t>(Get(in + 20, 4));
  fp->count = Get(in + 24, 8);
  fp->segment_bytes = Get(in + 32, 8);
  fp->mode = Get(in + 40, 8);
  return true;
}

// | magic 4 | seq 4 | verdict 2 (1 = ok, 0 = failed) | version 2 |
void EncodeVerdict(uint32_t seq, bool ok, uint8_t out[kVerdictBytes]) {
  Put(out, kVerdictMagic, 4);
  Put(out + 4, seq, 4);
  Put(out + 8, ok ? 1 : 0, 2);
  Put(out + 10, kVersion, 2);
}

bool DecodeVerdict(const uint8_t* in, size_t len, uint32_t* seq, bool* ok) {
  if (len != kVerdictBytes || Get(in, 4) != kVerdictMagic || Get(in + 10, 2) != kVersion ||
      Get(in + 8, 2) > 1)
    return false;
  *seq = static_cast<uint32_t>(Get(in + 4, 4));
  *ok = Get(in + 8, 2) == 1;
  return true;
}

}  // namespace sieve::algo
