// Our libcrypto wrapper (transport/bootstrap/sha256.h): SHA-256 against the FIPS 180-4 example
// vectors and HMAC-SHA-256 against RFC 4231's test cases, incremental updates at every split,
// keys of every length class (empty, one block exactly, longer than a block), constant-time compare.
#include "transport/bootstrap/sha256.h"

#include <gtest/gtest.h>

#include <random>
#include <string>

namespace sieve::transport {
namespace {

std::string HexOf(const Digest& d, size_t n = kSha256Bytes) {
  static const char kDigits[] = "0123456789abcdef";
  std::string out;
  for (size_t i = 0; i < n; ++i) {
    out += kDigits[d[i] >> 4];
    out += kDigits[d[i] & 15];
  }
  return out;
}

std::string Sha(const std::string& m) { return HexOf(Sha256Of(m.data(), m.size())); }

std::string Hmac(const std::string& key, const std::string& data, size_t n = kSha256Bytes) {
  HmacSha256 mac(key.data(), key.size());
  mac.Update(data.data(), data.size());
  return HexOf(mac.Final(), n);
}

TEST(Sha256Test, PublishedVectors) {
  EXPECT_EQ(Sha(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(Sha("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(Sha("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(Sha(std::string(1000000, 'a')),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(Sha256Test, IncrementalEqualsOneShotAtEverySplit) {
  std::mt19937 rng(3);
  std::string m(300, '\0');
  for (char& c : m) c = static_cast<char>(rng());
  // Lengths around the 55/56/64-byte padding boundaries, split at every point.
  for (size_t len : {0, 1, 55, 56, 63, 64, 65, 119, 120, 128, 300}) {
    std::string want = Sha(m.substr(0, len));
    for (size_t cut = 0; cut <= len; ++cut) {
      Sha256 s;
      s.Update(m.data(), cut);
      s.Update(m.data() + cut, len - cut);
      ASSERT_EQ(HexOf(s.Final()), want) << len << " split at " << cut;
    }
  }
}

TEST(HmacSha256Test, Rfc4231Vectors) {
  EXPECT_EQ(Hmac(std::string(20, '\x0b'), "Hi There"),
            "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
  EXPECT_EQ(Hmac("Jefe", "what do ya want for nothing?"),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
  EXPECT_EQ(Hmac(std::string(20, '\xaa'), std::string(50, '\xdd')),
            "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe");
  std::string key4;
  for (int i = 1; i <= 25; ++i) key4.push_back(static_cast<char>(i));
  EXPECT_EQ(Hmac(key4, std::string(50, '\xcd')),
            "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b");
  EXPECT_EQ(Hmac(std::string(20, '\x0c'), "Test With Truncation", 16),
            "a3b6167473100ee06e0c796c2955552b");
  EXPECT_EQ(Hmac(std::string(131, '\xaa'), "Test Using Larger Than Block-Size Key - Hash Key First"),
            "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
  EXPECT_EQ(Hmac(std::string(131, '\xaa'),
                 "This is a test using a larger than block-size key and a larger than block-size "
                 "data. The key needs to be hashed before being used by the HMAC algorithm."),
            "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2");
}

// Keys at the edges of HMAC's key handling: empty (a null-length key is valid), exactly one
// 64-byte block (used as is, not hashed). Values from Python's hmac module.
TEST(HmacSha256Test, EmptyAndBlockSizedKeys) {
  EXPECT_EQ(Hmac("", ""), "b613679a0814d9ec772f95d778c35fc5ff1697c493715653c6c712144292c5ad");
  EXPECT_EQ(Hmac("", "The quick brown fox jumps over the lazy dog"),
            "fb011e6154a19b9a4c767373c305275a5a69e8b68b0b4c9200c383dced19a416");
  EXPECT_EQ(Hmac(std::string(64, 'k'), "x"),
            "f91c4c403625fb06910ef93999265bbd2d62baeaec6ff36455498cc124fe3e66");
}

TEST(HmacSha256Test, IncrementalEqualsOneShotAtEverySplit) {
  std::string key = "job secret", m(150, '\0');
  std::mt19937 rng(5);
  for (char& c : m) c = static_cast<char>(rng());
  std::string want = Hmac(key, m);
  for (size_t cut = 0; cut <= m.size(); ++cut) {
    HmacSha256 mac(key.data(), key.size());
    mac.Update(m.data(), cut);
    mac.Update(m.data() + cut, m.size() - cut);
    ASSERT_EQ(HexOf(mac.Final()), want) << "split at " << cut;
  }
}

TEST(HmacSha256Test, ConstantTimeEqual) {
  uint8_t a[32] = {}, b[32] = {};
  EXPECT_TRUE(ConstantTimeEqual(a, b, 32));
  for (int i = 0; i < 32; ++i) {
    b[i] = 1;
    EXPECT_FALSE(ConstantTimeEqual(a, b, 32)) << i;
    b[i] = 0;
  }
  EXPECT_TRUE(ConstantTimeEqual(a, b, 0));
}

}  // namespace
}  // namespace sieve::transport
