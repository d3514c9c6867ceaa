// SHA-256 (FIPS 180-4) and HMAC-SHA-256 (RFC 2104), written for the bootstrap handshake so
// the job secret is proven without being sent. Plain portable C++; no library dependency.
#ifndef SIEVE_TRANSPORT_BOOTSTRAP_SHA256_H_
#define SIEVE_TRANSPORT_BOOTSTRAP_SHA256_H_

#include <array>
#include <cstddef>
#include <cstdint>

namespace sieve::transport {

constexpr size_t kSha256Bytes = 32;
using Digest = std::array<uint8_t, kSha256Bytes>;

// Incremental SHA-256. Update any number of times, then Final once. Not thread-safe.
class Sha256 {
 public:
  Sha256();
  void Update(const void* data, size_t len);
  Digest Final();

 private:
  void Block(const uint8_t* p);

  uint32_t h_[8];
  uint8_t buf_[64];
  size_t buf_len_ = 0;
  uint64_t total_ = 0;  // bytes hashed so far
};

Digest Sha256Of(const void* data, size_t len);

// Incremental HMAC-SHA-256 with a key of any length (longer than 64 bytes is hashed first).
class HmacSha256 {
 public:
  HmacSha256(const void* key, size_t key_len);
  void Update(const void* data, size_t len) { inner_.Update(data, len); }
  Digest Final();

 private:
  Sha256 inner_;
  uint8_t opad_key_[64];
};

// Compares n bytes in time independent of where they differ.
bool ConstantTimeEqual(const uint8_t* a, const uint8_t* b, size_t n);

}  // namespace sieve::transport

#endif  // SIEVE_TRANSPORT_BOOTSTRAP_SHA256_H_
