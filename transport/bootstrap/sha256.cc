// SHA-256 and HMAC-SHA-256 through libcrypto's EVP interfaces (EVP_sha256, EVP_MAC "HMAC").
#include "transport/bootstrap/sha256.h"

#include <errno.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/params.h>
#include <openssl/rand.h>
#include <sys/random.h>

#include "core/log.h"

namespace sieve::transport {

namespace {

// The digest and MAC implementations, fetched from the default provider once per process.
const EVP_MD* Sha256Md() {
  static EVP_MD* md = EVP_MD_fetch(nullptr, "SHA256", nullptr);
  return md;
}

EVP_MAC* HmacMac() {
  static EVP_MAC* mac = EVP_MAC_fetch(nullptr, "HMAC", nullptr);
  return mac;
}

// What a failed computation returns: logged, and bytes nobody can predict (see sha256.h).
Digest Unpredictable(const char* what) {
  unsigned long err = ERR_get_error();
  char reason[256] = "no libcrypto error queued";
  if (err != 0) ERR_error_string_n(err, reason, sizeof(reason));
  ERR_clear_error();
  SIEVE_WARN("libcrypto %s failed (%s): the bootstrap frame it covers will not verify", what,
             reason);
  Digest out{};
  if (RAND_bytes(out.data(), static_cast<int>(out.size())) == 1) return out;
  size_t got = 0;
  while (got < out.size()) {
    ssize_t r = getrandom(out.data() + got, out.size() - got, 0);
    if (r > 0) got += static_cast<size_t>(r);
    else if (errno != EINTR) break;
  }
  return out;
}

}  // namespace

Sha256::Sha256() : ctx_(EVP_MD_CTX_new()), ok_(false) {
  ok_ = ctx_ != nullptr && Sha256Md() != nullptr &&
        EVP_DigestInit_ex2(ctx_, Sha256Md(), nullptr) == 1;
}

Sha256::~Sha256() { EVP_MD_CTX_free(ctx_); }

void Sha256::Update(const void* data, size_t len) {
  if (ok_ && len > 0) ok_ = EVP_DigestUpdate(ctx_, data, len) == 1;
}

Digest Sha256::Final() {
  Digest out{};
  unsigned int n = 0;
  if (ok_ && EVP_DigestFinal_ex(ctx_, out.data(), &n) == 1 && n == out.size()) return out;
  ok_ = false;
  return Unpredictable("SHA-256");
}

Digest Sha256Of(const void* data, size_t len) {
  Sha256 s;
  s.Update(data, len);
  return s.Final();
}

HmacSha256::HmacSha256(const void* key, size_t key_len) : ctx_(nullptr), ok_(false) {
  if (HmacMac() == nullptr) return;
  ctx_ = EVP_MAC_CTX_new(HmacMac());
  if (ctx_ == nullptr) return;
  char digest_name[] = "SHA256";
  OSSL_PARAM params[] = {
      OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest_name, 0),
      OSSL_PARAM_construct_end()};
  // An empty key is a valid HMAC key (RFC 2104); libcrypto wants a non-null pointer for it.
  static const unsigned char kNoKey = 0;
  const auto* k = key_len > 0 ? static_cast<const unsigned char*>(key) : &kNoKey;
  ok_ = EVP_MAC_init(ctx_, k, key_len, params) == 1;
}

HmacSha256::~HmacSha256() { EVP_MAC_CTX_free(ctx_); }

void HmacSha256::Update(const void* data, size_t len) {
  if (ok_ && len > 0) ok_ = EVP_MAC_update(ctx_, static_cast<const unsigned char*>(data), len) == 1;
}

Digest HmacSha256::Final() {
  Digest out{};
  size_t n = 0;
  if (ok_ && EVP_MAC_final(ctx_, out.data(), &n, out.size()) == 1 && n == out.size()) return out;
  ok_ = false;
  return Unpredictable("HMAC-SHA-256");
}

bool ConstantTimeEqual(const uint8_t* a, const uint8_t* b, size_t n) {
  return CRYPTO_memcmp(a, b, n) == 0;
}

}  // namespace sieve::transport
