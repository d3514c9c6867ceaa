// Encoders and parsers of the bootstrap frames (layouts in wire.h). Parsers read only the
// bytes they are given and check every length before using it.
#include "transport/bootstrap/wire.h"

#include <cstring>

namespace sieve::transport {

const char kChallengeMagic[4] = {'S', 'V', 'B', 'C'};
const char kHelloMagic[4] = {'S', 'V', 'B', 'H'};
const char kReplyMagic[4] = {'S', 'V', 'B', 'R'};

namespace {

constexpr size_t kHelloMacOffset = 88;
constexpr size_t kReplyMacOffset = 48;

std::string Prefix(const char magic[4], uint16_t low_bytes) {
  std::string out(magic, 4);
  PutLE(kBootstrapProtocolVersion, 2, &out);
  PutLE(low_bytes, 2, &out);
  return out;
}

void Append(std::string* out, const void* p, size_t n) {
  out->append(static_cast<const char*>(p), n);
}

Digest Mac(const uint8_t* secret, const uint8_t* nonce, const uint8_t* covered, size_t n) {
  HmacSha256 mac(secret, kJobSecretBytes);
  mac.Update(nonce, kNonceBytes);
  mac.Update(covered, n);
  return mac.Final();
}

// Appends the MAC of everything in *out so far: it closes a header.
void AppendMac(const uint8_t* secret, const uint8_t* nonce, std::string* out) {
  Digest mac = Mac(secret, nonce, reinterpret_cast<const uint8_t*>(out->data()), out->size());
  Append(out, mac.data(), mac.size());
}

// Whether the MAC at mac_offset of a received header covers its first mac_offset bytes.
bool MacValidAt(const uint8_t* header, size_t mac_offset, const uint8_t* secret,
                const uint8_t* nonce) {
  Digest want = Mac(secret, nonce, header, mac_offset);
  return ConstantTimeEqual(want.data(), header + mac_offset, kSha256Bytes);
}

Status Short(const char* what, size_t n, size_t need) {
  return Status::InvalidArgument(StrFormat("%s of %zu bytes, expected %zu", what, n, need));
}

}  // namespace

void PutLE(uint64_t v, int bytes, std::string* out) {
  for (int i = 0; i < bytes; ++i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

uint64_t GetLE(const uint8_t* p, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v |= static_cast<uint64_t>(p[i]) << (8 * i);
  return v;
}

Status CheckFramePrefix(const uint8_t* p, size_t n, const char magic[4], const std::string& what) {
  if (n < kFramePrefixBytes) return Short("frame prefix", n, kFramePrefixBytes);
  if (std::memcmp(p, magic, 4) != 0)
    return Status::InvalidArgument(what + " is not a Sieve bootstrap peer (bad magic)");
  unsigned version = static_cast<unsigned>(GetLE(p + 4, 2));
  if (version != kBootstrapProtocolVersion) {
    return Status::InvalidUsage(
        StrFormat("%s speaks bootstrap protocol version %u; this process speaks version %u "
                  "(mixed Sieve versions in one job?)",
                  what.c_str(), version, unsigned{kBootstrapProtocolVersion}));
  }
  return Status::OK();
}

std::string EncodeChallenge(const Challenge& c) {
  std::string out = Prefix(kChallengeMagic, 0);
  Append(&out, c.nonce, kNonceBytes);
  return out;
}

Status ParseChallenge(const uint8_t* p, size_t n, Challenge* out) {
  SIEVE_RETURN_IF_ERROR(CheckFramePrefix(p, n, kChallengeMagic, "the bootstrap root"));
  if (n != kChallengeBytes) return Short("challenge", n, kChallengeBytes);
  if (GetLE(p + 6, 2) != 0) return Status::InvalidArgument("malformed challenge (reserved bytes set)");
  std::memcpy(out->nonce, p + 8, kNonceBytes);
  return Status::OK();
}

std::string EncodeHello(const uint8_t secret[kJobSecretBytes],
                        const uint8_t root_nonce[kNonceBytes], int rank, int nranks,
                        const uint8_t rank_nonce[kNonceBytes], const PeerInfo& info) {
  std::string out = Prefix(kHelloMagic, 0);
  PutLE(static_cast<uint32_t>(rank), 4, &out);
  PutLE(static_cast<uint32_t>(nranks), 4, &out);
  PutLE(info.worker_address.size(), 4, &out);
  PutLE(info.host_id.size(), 4, &out);
  Append(&out, rank_nonce, kNonceBytes);
  Sha256 body;
  body.Update(info.worker_address.data(), info.worker_address.size());
  body.Update(info.host_id.data(), info.host_id.size());
  Digest d = body.Final();
  Append(&out, d.data(), d.size());
  AppendMac(secret, root_nonce, &out);
  return out + info.worker_address + info.host_id;
}

Status ParseHelloHeader(const uint8_t* p, size_t n, HelloHeader* out) {
  SIEVE_RETURN_IF_ERROR(CheckFramePrefix(p, n, kHelloMagic, "the connecting peer"));
  if (n != kHelloHeaderBytes) return Short("hello header", n, kHelloHeaderBytes);
  if (GetLE(p + 6, 2) != 0) return Status::InvalidArgument("malformed hello (reserved bytes set)");
  HelloHeader h;
  h.rank = static_cast<int32_t>(GetLE(p + 8, 4));
  h.nranks = static_cast<int32_t>(GetLE(p + 12, 4));
  h.worker_len = static_cast<uint32_t>(GetLE(p + 16, 4));
  h.host_len = static_cast<uint32_t>(GetLE(p + 20, 4));
  if (h.body_len() > kMaxPeerInfoBytes) {
    return Status::InvalidArgument(
        StrFormat("peer info of %zu bytes exceeds the %zu-byte cap", h.body_len(),
                  kMaxPeerInfoBytes));
  }
  std::memcpy(h.nonce, p + 24, kNonceBytes);
  std::memcpy(h.body_digest.data(), p + 56, kSha256Bytes);
  std::memcpy(h.mac.data(), p + kHelloMacOffset, kSha256Bytes);
  *out = h;
  return Status::OK();
}

bool HelloMacValid(const uint8_t* header, const uint8_t secret[kJobSecretBytes],
                   const uint8_t root_nonce[kNonceBytes]) {
  return MacValidAt(header, kHelloMacOffset, secret, root_nonce);
}

Status ParseHelloBody(const HelloHeader& h, const uint8_t* body, size_t n, PeerInfo* out) {
  if (n != h.body_len()) return Short("hello body", n, h.body_len());
  Digest d = Sha256Of(body, n);
  if (!ConstantTimeEqual(d.data(), h.body_digest.data(), kSha256Bytes))
    return Status::InvalidArgument("hello body does not match its digest");
  const char* c = reinterpret_cast<const char*>(body);
  out->worker_address.assign(c, h.worker_len);
  out->host_id.assign(c + h.worker_len, h.host_len);
  return Status::OK();
}

std::string EncodeReplyHeader(const uint8_t secret[kJobSecretBytes],
                              const uint8_t rank_nonce[kNonceBytes], ReplyKind kind,
                              uint64_t body_len, const Digest& body_digest) {
  std::string out = Prefix(kReplyMagic, static_cast<uint16_t>(kind));
  PutLE(body_len, 8, &out);
  Append(&out, body_digest.data(), body_digest.size());
  AppendMac(secret, rank_nonce, &out);
  return out;
}

Status ParseReplyHeader(const uint8_t* p, size_t n, int nranks, ReplyHeader* out) {
  SIEVE_RETURN_IF_ERROR(CheckFramePrefix(p, n, kReplyMagic, "the bootstrap root"));
  if (n != kReplyHeaderBytes) return Short("reply header", n, kReplyHeaderBytes);
  ReplyHeader h;
  uint64_t kind = GetLE(p + 6, 2);
  if (kind != static_cast<uint16_t>(ReplyKind::kTable) &&
      kind != static_cast<uint16_t>(ReplyKind::kError))
    return Status::InvalidArgument(StrFormat("reply of unknown kind %u", unsigned(kind)));
  h.kind = static_cast<ReplyKind>(kind);
  h.body_len = GetLE(p + 8, 8);
  uint64_t cap = kMaxErrorBytes;
  if (h.kind == ReplyKind::kTable) {
    cap = nranks < 1 ? 0 : static_cast<uint64_t>(nranks) * (8 + kMaxPeerInfoBytes);
    if (cap > kMaxTableBytes) cap = kMaxTableBytes;
  }
  if (h.body_len > cap) {
    return Status::InvalidArgument(
        StrFormat("reply body of %llu bytes exceeds the %llu-byte cap",
                  static_cast<unsigned long long>(h.body_len),
                  static_cast<unsigned long long>(cap)));
  }
  std::memcpy(h.body_digest.data(), p + 16, kSha256Bytes);
  std::memcpy(h.mac.data(), p + kReplyMacOffset, kSha256Bytes);
  *out = h;
  return Status::OK();
}

bool ReplyMacValid(const uint8_t* header, const uint8_t secret[kJobSecretBytes],
                   const uint8_t rank_nonce[kNonceBytes]) {
  return MacValidAt(header, kReplyMacOffset, secret, rank_nonce);
}

std::string EncodeTable(const std::vector<PeerInfo>& table) {
  std::string body;
  for (const PeerInfo& info : table) {
    PutLE(info.worker_address.size(), 4, &body);
    PutLE(info.host_id.size(), 4, &body);
    body += info.worker_address + info.host_id;
  }
  return body;
}

Status ParseTable(const uint8_t* p, size_t n, int nranks, std::vector<PeerInfo>* out) {
  if (nranks < 1 || nranks > kMaxBootstrapRanks)
    return Status::InvalidArgument(StrFormat("table for invalid nranks %d", nranks));
  if (n / 8 < static_cast<size_t>(nranks))
    return Status::InvalidArgument(StrFormat("table of %zu bytes cannot hold %d entries", n, nranks));
  std::vector<PeerInfo> table(nranks);
  size_t at = 0;
  for (int r = 0; r < nranks; ++r) {
    if (n - at < 8) return Status::InvalidArgument(StrFormat("table ends inside entry %d", r));
    uint64_t wlen = GetLE(p + at, 4), hlen = GetLE(p + at + 4, 4);
    at += 8;
    if (wlen + hlen > kMaxPeerInfoBytes)
      return Status::InvalidArgument(StrFormat("table entry %d exceeds the peer info cap", r));
    if (n - at < wlen + hlen)
      return Status::InvalidArgument(StrFormat("table ends inside entry %d", r));
    const char* c = reinterpret_cast<const char*>(p + at);
    table[r].worker_address.assign(c, wlen);
    table[r].host_id.assign(c + wlen, hlen);
    at += wlen + hlen;
  }
  if (at != n)
    return Status::InvalidArgument(StrFormat("table has %zu bytes after the last entry", n - at));
  *out = std::move(table);
  return Status::OK();
}

}  // namespace sieve::transport
