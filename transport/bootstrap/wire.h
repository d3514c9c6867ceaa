// Bootstrap wire format: the fixed-layout, versioned, length-capped little-endian frames the
// root and the ranks exchange, with pure encoders and parsers (bytes in, struct or error out)
// so every check on received bytes lives here and can be fuzzed.
//
// Handshake (version 2). The job secret (32 bytes, from the unique id) never crosses the wire:
//   root -> rank  Challenge  a fresh 32-byte root nonce
//   rank -> root  Hello      rank, nranks, a fresh rank nonce, SHA-256 of the body and
//                            HMAC-SHA-256(secret, root nonce || header bytes [0, 88)), then body
//   root -> rank  Reply      kind, body length, SHA-256 of the body and
//                            HMAC-SHA-256(secret, rank nonce || header bytes [0, 48)), then body
// Each MAC covers the other side's nonce (no replay) and starts with a different magic (no
// reflection). Every frame starts with a 4-byte magic and a u16 version at [4, 6) in every
// version, so a peer speaking another version is recognised and named.
#ifndef SIEVE_TRANSPORT_BOOTSTRAP_WIRE_H_
#define SIEVE_TRANSPORT_BOOTSTRAP_WIRE_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "transport/bootstrap/sha256.h"

namespace sieve::transport {

// What each rank publishes (opaque bytes; binary zeros allowed).
struct PeerInfo {
  std::string worker_address;  // the UCX worker address
  std::string host_id;         // identifies the host (for shared-memory decisions)
  bool operator==(const PeerInfo& o) const {
    return worker_address == o.worker_address && host_id == o.host_id;
  }
  bool operator!=(const PeerInfo& o) const { return !(*this == o); }
};

constexpr uint16_t kBootstrapProtocolVersion = 2;
constexpr size_t kJobSecretBytes = 32;
constexpr size_t kNonceBytes = 32;
// worker_address + host_id of one rank may not exceed this many bytes.
constexpr size_t kMaxPeerInfoBytes = size_t{1} << 20;
// Largest nranks a root accepts (bounds its bookkeeping against a bogus hello).
constexpr int kMaxBootstrapRanks = 1 << 20;
// Largest error text a reply may carry.
constexpr size_t kMaxErrorBytes = 64 * 1024;
// Largest table body a rank accepts (also bounded by nranks * (8 + kMaxPeerInfoBytes)).
constexpr uint64_t kMaxTableBytes = uint64_t{1} << 30;

constexpr size_t kFramePrefixBytes = 6;  // magic + version: the same layout in every version
constexpr size_t kChallengeBytes = 40;
constexpr size_t kHelloHeaderBytes = 120;
constexpr size_t kReplyHeaderBytes = 80;

// Frame magics.
extern const char kChallengeMagic[4];  // "SVBC"
extern const char kHelloMagic[4];      // "SVBH"
extern const char kReplyMagic[4];      // "SVBR"

enum class ReplyKind : uint16_t { kTable = 0, kError = 1 };

// Checks the first kFramePrefixBytes of a frame: `what` names the sender in the message.
// Wrong magic -> InvalidArgument "... is not a Sieve bootstrap peer (bad magic)"; another
// version -> InvalidUsage "... speaks bootstrap protocol version X; this process speaks Y".
Status CheckFramePrefix(const uint8_t* p, size_t n, const char magic[4], const std::string& what);

// Challenge: [0,4) "SVBC" [4,6) version [6,8) zero [8,40) root nonce.
struct Challenge {
  uint8_t nonce[kNonceBytes] = {};
};
std::string EncodeChallenge(const Challenge& c);
Status ParseChallenge(const uint8_t* p, size_t n, Challenge* out);

// Hello header: [0,4) "SVBH" [4,6) version [6,8) zero [8,12) rank (int32) [12,16) nranks
// (int32) [16,20) worker_address length [20,24) host_id length (u32, sum <= kMaxPeerInfoBytes)
// [24,56) rank nonce [56,88) SHA-256 of the body [88,120) MAC. Body: worker_address, host_id.
struct HelloHeader {
  int32_t rank = 0;
  int32_t nranks = 0;
  uint32_t worker_len = 0;
  uint32_t host_len = 0;
  uint8_t nonce[kNonceBytes] = {};
  Digest body_digest{};
  Digest mac{};
  size_t body_len() const { return size_t{worker_len} + host_len; }
};
// Header + body. rank and nranks are sent as given (the root judges them).
std::string EncodeHello(const uint8_t secret[kJobSecretBytes],
                        const uint8_t root_nonce[kNonceBytes], int rank, int nranks,
                        const uint8_t rank_nonce[kNonceBytes], const PeerInfo& info);
// Format checks only (magic, version, reserved bytes, length cap); not the MAC, not the ranks.
Status ParseHelloHeader(const uint8_t* p, size_t n, HelloHeader* out);
// True when header (kHelloHeaderBytes) carries the MAC of this secret over root_nonce.
bool HelloMacValid(const uint8_t* header, const uint8_t secret[kJobSecretBytes],
                   const uint8_t root_nonce[kNonceBytes]);
// Splits a body whose digest matches into *out; error when it does not.
Status ParseHelloBody(const HelloHeader& h, const uint8_t* body, size_t n, PeerInfo* out);

// Reply header: [0,4) "SVBR" [4,6) version [6,8) kind [8,16) body length (u64)
// [16,48) SHA-256 of the body [48,80) MAC. Table body: per rank in order, u32 worker_address
// length, u32 host_id length, the two strings. Error body: the root's message.
struct ReplyHeader {
  ReplyKind kind = ReplyKind::kTable;
  uint64_t body_len = 0;
  Digest body_digest{};
  Digest mac{};
};
std::string EncodeReplyHeader(const uint8_t secret[kJobSecretBytes],
                              const uint8_t rank_nonce[kNonceBytes], ReplyKind kind,
                              uint64_t body_len, const Digest& body_digest);
// Format checks: magic, version, kind, and body_len against the cap for kind (a table for
// nranks ranks, or kMaxErrorBytes).
Status ParseReplyHeader(const uint8_t* p, size_t n, int nranks, ReplyHeader* out);
bool ReplyMacValid(const uint8_t* header, const uint8_t secret[kJobSecretBytes],
                   const uint8_t rank_nonce[kNonceBytes]);

std::string EncodeTable(const std::vector<PeerInfo>& table);
// Exactly nranks entries, each within kMaxPeerInfoBytes, consuming exactly n bytes.
Status ParseTable(const uint8_t* p, size_t n, int nranks, std::vector<PeerInfo>* out);

// Little-endian helpers shared by the encoders.
void PutLE(uint64_t v, int bytes, std::string* out);
uint64_t GetLE(const uint8_t* p, int bytes);

}  // namespace sieve::transport

#endif  // SIEVE_TRANSPORT_BOOTSTRAP_WIRE_H_
