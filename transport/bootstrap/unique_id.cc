// Encoding of the 128-byte unique id, its hex text form, and secret generation.
#include "transport/bootstrap/unique_id.h"

#include <errno.h>
#include <netinet/in.h>
#include <sys/random.h>

#include <cstring>

#include "transport/bootstrap/sha256.h"

namespace sieve::transport {

namespace {

// Id layout (all integers little-endian, fixed width; bytes 64..127 are zero):
//   [0,4)    magic "SIEV"
//   [4,6)    format version (kIdVersion)
//   [6,8)    address family: 4 = IPv4, 6 = IPv6 (not the host's AF_* value)
//   [8,10)   root port
//   [10,12)  reserved, zero
//   [12,16)  IPv6 scope id (0 for IPv4)
//   [16,32)  root address: IPv4 in the first 4 bytes (network order), or the 16-byte IPv6
//   [32,64)  secret (256 bits; version 1 had 128 bits at [32,48))
//   [64,128) zero
constexpr char kIdMagic[4] = {'S', 'I', 'E', 'V'};
constexpr uint16_t kIdVersion = 2;
constexpr size_t kOffVersion = 4, kOffFamily = 6, kOffPort = 8, kOffScope = 12, kOffAddr = 16,
                 kOffSecret = 32;

void PutU16(uint16_t v, char* p) {
  p[0] = static_cast<char>(v & 0xff);
  p[1] = static_cast<char>(v >> 8);
}
void PutU32(uint32_t v, char* p) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<char>((v >> (8 * i)) & 0xff);
}
uint16_t GetU16(const char* p) {
  return static_cast<uint16_t>(static_cast<uint8_t>(p[0]) | (static_cast<uint8_t>(p[1]) << 8));
}
uint32_t GetU32(const char* p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= static_cast<uint32_t>(static_cast<uint8_t>(p[i])) << (8 * i);
  return v;
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

Status NotAnId(const char* why) {
  return Status::InvalidArgument(StrFormat("not a Sieve unique id (%s)", why));
}

}  // namespace

void EncodeUniqueId(const UniqueId& id, char out[kUniqueIdBytes]) {
  std::memset(out, 0, kUniqueIdBytes);
  std::memcpy(out, kIdMagic, sizeof(kIdMagic));
  PutU16(kIdVersion, out + kOffVersion);
  if (id.root.ss_family == AF_INET) {
    const auto* a = reinterpret_cast<const sockaddr_in*>(&id.root);
    PutU16(4, out + kOffFamily);
    PutU16(ntohs(a->sin_port), out + kOffPort);
    std::memcpy(out + kOffAddr, &a->sin_addr, 4);
  } else if (id.root.ss_family == AF_INET6) {
    const auto* a = reinterpret_cast<const sockaddr_in6*>(&id.root);
    PutU16(6, out + kOffFamily);
    PutU16(ntohs(a->sin6_port), out + kOffPort);
    PutU32(a->sin6_scope_id, out + kOffScope);
    std::memcpy(out + kOffAddr, &a->sin6_addr, 16);
  }
  std::memcpy(out + kOffSecret, id.secret, kSecretBytes);
}

Status DecodeUniqueId(const char in[kUniqueIdBytes], UniqueId* out) {
  if (std::memcmp(in, kIdMagic, sizeof(kIdMagic)) != 0) return NotAnId("bad magic");
  if (GetU16(in + kOffVersion) != kIdVersion) {
    return Status::InvalidArgument(
        StrFormat("not a Sieve unique id (format version %u, expected %u)",
                  GetU16(in + kOffVersion), kIdVersion));
  }
  if (GetU16(in + kOffScope - 2) != 0) return NotAnId("reserved bytes set");
  for (size_t i = kOffSecret + kSecretBytes; i < kUniqueIdBytes; ++i)
    if (in[i] != 0) return NotAnId("reserved bytes set");
  uint16_t family = GetU16(in + kOffFamily);
  uint16_t port = GetU16(in + kOffPort);
  if (port == 0) return NotAnId("port 0");
  UniqueId id;
  if (family == 4) {
    // Canonical form only: what EncodeUniqueId writes for IPv4 leaves these bytes zero.
    if (GetU32(in + kOffScope) != 0) return NotAnId("reserved bytes set");
    for (size_t i = kOffAddr + 4; i < kOffSecret; ++i)
      if (in[i] != 0) return NotAnId("reserved bytes set");
    auto* a = reinterpret_cast<sockaddr_in*>(&id.root);
    a->sin_family = AF_INET;
    a->sin_port = htons(port);
    std::memcpy(&a->sin_addr, in + kOffAddr, 4);
  } else if (family == 6) {
    auto* a = reinterpret_cast<sockaddr_in6*>(&id.root);
    a->sin6_family = AF_INET6;
    a->sin6_port = htons(port);
    a->sin6_scope_id = GetU32(in + kOffScope);
    std::memcpy(&a->sin6_addr, in + kOffAddr, 16);
  } else {
    return NotAnId("unknown address family");
  }
  std::memcpy(id.secret, in + kOffSecret, kSecretBytes);
  *out = id;
  return Status::OK();
}

std::string IdToHex(const char id[kUniqueIdBytes]) {
  static const char kDigits[] = "0123456789abcdef";
  std::string hex(2 * kUniqueIdBytes, '0');
  for (size_t i = 0; i < kUniqueIdBytes; ++i) {
    uint8_t b = static_cast<uint8_t>(id[i]);
    hex[2 * i] = kDigits[b >> 4];
    hex[2 * i + 1] = kDigits[b & 0xf];
  }
  return hex;
}

Status IdFromHex(const std::string& hex, char id[kUniqueIdBytes]) {
  if (hex.size() != 2 * kUniqueIdBytes) {
    return Status::InvalidArgument(
        StrFormat("unique id text has %zu characters, expected %zu hex digits", hex.size(),
                  2 * kUniqueIdBytes));
  }
  char bytes[kUniqueIdBytes];
  for (size_t i = 0; i < kUniqueIdBytes; ++i) {
    int hi = HexValue(hex[2 * i]), lo = HexValue(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) {
      size_t at = hi < 0 ? 2 * i : 2 * i + 1;
      return Status::InvalidArgument(
          StrFormat("unique id text has a non-hex character at position %zu (0x%02x)", at,
                    static_cast<unsigned>(static_cast<uint8_t>(hex[at]))));
    }
    bytes[i] = static_cast<char>((hi << 4) | lo);
  }
  std::memcpy(id, bytes, kUniqueIdBytes);
  return Status::OK();
}

Status RandomBytes(uint8_t* out, size_t n) {
  size_t got = 0;
  while (got < n) {
    ssize_t r = getrandom(out + got, n - got, 0);
    if (r < 0) {
      if (errno == EINTR) continue;
      return Status::SystemError(StrFormat("getrandom failed: %s", std::strerror(errno)));
    }
    got += static_cast<size_t>(r);
  }
  return Status::OK();
}

Status RandomSecret(uint8_t secret[kSecretBytes]) { return RandomBytes(secret, kSecretBytes); }

void DeriveSecret(const std::string& key, const std::string& text, uint8_t secret[kSecretBytes]) {
  static_assert(kSecretBytes == kSha256Bytes, "the derived secret is one HMAC-SHA-256 output");
  HmacSha256 mac(key.data(), key.size());
  mac.Update(text.data(), text.size());
  Digest d = mac.Final();
  std::memcpy(secret, d.data(), kSecretBytes);
}

}  // namespace sieve::transport
