// Fuzzes what the bootstrap root parses from a connecting peer: the frame prefix, the hello
// header (caps, reserved bytes), its MAC check, and the body split. Byte 0 chooses whether the
// harness repairs the body digest first, so the body path is reached too.
#include <cstring>
#include <string>

#include "fuzz_check.h"
#include "transport/bootstrap/wire.h"

using namespace sieve::transport;
using sieve::Status;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const bool fix_digest = data[0] & 1;
  std::string msg(reinterpret_cast<const char*>(data + 1), size - 1);
  auto* p = reinterpret_cast<const uint8_t*>(msg.data());
  Status prefix = CheckFramePrefix(p, msg.size(), kHelloMagic, "fuzz");
  HelloHeader h;
  // The root parses exactly kHelloHeaderBytes once the prefix passed; here any length too.
  Status st = ParseHelloHeader(p, msg.size() < kHelloHeaderBytes ? msg.size() : kHelloHeaderBytes, &h);
  if (!prefix.ok()) FUZZ_CHECK(!st.ok());
  if (!st.ok()) return 0;
  FUZZ_CHECK(msg.size() >= kHelloHeaderBytes);
  FUZZ_CHECK(h.body_len() <= kMaxPeerInfoBytes);
  const uint8_t secret[kJobSecretBytes] = {1, 2, 3};
  const uint8_t nonce[kNonceBytes] = {4, 5, 6};
  (void)HelloMacValid(p, secret, nonce);
  size_t body_len = msg.size() - kHelloHeaderBytes;
  if (fix_digest) h.body_digest = Sha256Of(p + kHelloHeaderBytes, body_len);
  PeerInfo info;
  st = ParseHelloBody(h, p + kHelloHeaderBytes, body_len, &info);
  if (st.ok()) {
    FUZZ_CHECK(body_len == h.body_len());
    FUZZ_CHECK(info.worker_address.size() == h.worker_len);
    FUZZ_CHECK((info.worker_address + info.host_id) ==
               msg.substr(kHelloHeaderBytes));
  } else {
    FUZZ_CHECK(body_len != h.body_len() || !fix_digest);
  }
  return 0;
}
