// SHA-256 and HMAC-SHA-256 for the bootstrap handshake (the job secret is proven without being
// sent), through OpenSSL's libcrypto: a thin wrapper so the wire code keeps one small interface.
#ifndef SIEVE_TRANSPORT_BOOTSTRAP_SHA256_H_
#define SIEVE_TRANSPORT_BOOTSTRAP_SHA256_H_

#include <array>
#include <cstddef>
#include <cstdint>

// libcrypto's context types, without its headers in ours.
typedef struct evp_md_ctx_st EVP_MD_CTX;
typedef struct evp_mac_ctx_st EVP_MAC_CTX;

namespace sieve::transport {

constexpr size_t kSha256Bytes = 32;
using Digest = std::array<uint8_t, kSha256Bytes>;

// Should libcrypto fail (out of memory, a provider without SHA-256), Final logs the error and
// returns unpredictable bytes instead of a digest: a MAC or digest check against it then fails,
// so a failure can never make a forged frame verify.

// Incremental SHA-256. Update any number of times, then Final once. Not thread-safe.
class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;
  void Update(const void* data, size_t len);
  Digest Final();

 private:
  EVP_MD_CTX* ctx_;
  bool ok_;
};

Digest Sha256Of(const void* data, size_t len);

// Incremental HMAC-SHA-256 (RFC 2104) with a key of any length. Final once. Not thread-safe.
class HmacSha256 {
 public:
  HmacSha256(const void* key, size_t key_len);
  ~HmacSha256();
  HmacSha256(const HmacSha256&) = delete;
  HmacSha256& operator=(const HmacSha256&) = delete;
  void Update(const void* data, size_t len);
  Digest Final();

 private:
  EVP_MAC_CTX* ctx_;
  bool ok_;
};

// Compares n bytes in time independent of where they differ (CRYPTO_memcmp).
bool ConstantTimeEqual(const uint8_t* a, const uint8_t* b, size_t n);

}  // namespace sieve::transport

#endif  // SIEVE_TRANSPORT_BOOTSTRAP_SHA256_H_
