// The 128-byte unique id that names a bootstrap root (address + port + shared secret),
// its binary encoding, its 256-hex-digit text form, and secret generation.
#ifndef SIEVE_TRANSPORT_BOOTSTRAP_UNIQUE_ID_H_
#define SIEVE_TRANSPORT_BOOTSTRAP_UNIQUE_ID_H_

#include <sys/socket.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "core/status.h"

namespace sieve::transport {

constexpr size_t kUniqueIdBytes = 128;
constexpr size_t kSecretBytes = 32;  // 256-bit job secret

// The decoded id: where the root listens and the secret every rank must present.
struct UniqueId {
  sockaddr_storage root{};  // AF_INET or AF_INET6, port set
  uint8_t secret[kSecretBytes] = {};
};

// Writes the fixed little-endian layout documented in unique_id.cc; unused bytes are zero.
// REQUIRES: id.root is AF_INET or AF_INET6.
void EncodeUniqueId(const UniqueId& id, char out[kUniqueIdBytes]);

// Validates magic, format version, address family and port; anything else is
// InvalidArgument "not a Sieve unique id (...)". *out is set only on success.
Status DecodeUniqueId(const char in[kUniqueIdBytes], UniqueId* out);

// 256 lowercase hex digits.
std::string IdToHex(const char id[kUniqueIdBytes]);
// Parses exactly 256 hex digits (either case); only the bytes are checked, not the content.
Status IdFromHex(const std::string& hex, char id[kUniqueIdBytes]);

// Fills secret with getrandom() bytes.
Status RandomSecret(uint8_t secret[kSecretBytes]);
// Fills n bytes from getrandom() (nonces).
Status RandomBytes(uint8_t* out, size_t n);

// HMAC-SHA-256(key, text). Used when ranks share no id and must agree on a secret from
// MASTER_ADDR/MASTER_PORT: with an empty key it only keeps unrelated jobs on a reused port
// apart and is NOT a secret against anyone who knows text; with a shared key
// (SIEVE_BOOTSTRAP_SECRET) it is as secret as that key.
void DeriveSecret(const std::string& key, const std::string& text, uint8_t secret[kSecretBytes]);

}  // namespace sieve::transport

#endif  // SIEVE_TRANSPORT_BOOTSTRAP_UNIQUE_ID_H_
