// The 64-bit tag carried by every message: who sent it, which operation, which
// message of that operation. Receives match the full tag, so messages of
// different operations or senders can never be confused.
#ifndef SIEVE_TRANSPORT_TAG_H_
#define SIEVE_TRANSPORT_TAG_H_

#include <cstdint>

namespace sieve::transport {

// | 63..40 source rank (24) | 39 p2p flag | 38..20 operation seq (19) | 19..0 message index (20) |
constexpr int kTagRankBits = 24;
constexpr int kTagSeqBits = 19;
constexpr int kTagIndexBits = 20;
static_assert(kTagRankBits + 1 + kTagSeqBits + kTagIndexBits == 64, "tag fields fill 64 bits");
constexpr int kMaxRanks = 1 << kTagRankBits;

// seq and index wrap; with in-order matching per (sender, tag) that is safe as
// long as fewer than 2^19 operations / 2^20 messages are outstanding at once.
inline uint64_t MakeTag(int src_rank, bool p2p, uint32_t seq, uint32_t index) {
  return (static_cast<uint64_t>(src_rank) << 40) | (static_cast<uint64_t>(p2p ? 1 : 0) << 39) |
         (static_cast<uint64_t>(seq & ((1u << kTagSeqBits) - 1)) << 20) |
         (index & ((1u << kTagIndexBits) - 1));
}

// Per-collective control messages (algo/op_header.h) use the top two message
// indices of the operation's tag space; data messages number below them.
constexpr uint32_t kFingerprintIndex = (1u << kTagIndexBits) - 1;
constexpr uint32_t kVerdictIndex = (1u << kTagIndexBits) - 2;
constexpr uint32_t kDataIndexLimit = kVerdictIndex;
inline uint32_t DataIndex(uint32_t counter) { return counter % kDataIndexLimit; }

// Failure notices: p2p space, the reserved sequence number (p2p traffic
// itself always uses seq 0). Receivers match them from any sender. The body
// starts with the sender's first failed collective sequence number (4 bytes,
// little-endian), then the reason as text.
constexpr uint32_t kNoticeSeq = (1u << kTagSeqBits) - 1;
inline uint64_t NoticeTag(int src_rank) { return MakeTag(src_rank, true, kNoticeSeq, 0); }
// Membership exchanges (comm/membership.h: shrink, agreement on failed ranks) run beside a
// failed communicator's leftovers: p2p space, their own reserved sequence number; the message
// index names the exchange (epoch, kind, round).
constexpr uint32_t kMembershipSeq = kNoticeSeq - 1;
constexpr uint64_t kNoticeTagMask = (uint64_t{1} << 39) |
                                    (static_cast<uint64_t>((1u << kTagSeqBits) - 1) << 20);

}  // namespace sieve::transport

#endif  // SIEVE_TRANSPORT_TAG_H_
