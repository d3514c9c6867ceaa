// Fuzzes what a rank parses from the bootstrap root: the challenge, the reply header (kind and
// body caps for nranks) and the table body. Byte 0 picks nranks (1..64); a parsed table must
// re-encode to exactly the bytes it came from.
#include <string>
#include <vector>

#include "fuzz_check.h"
#include "transport/bootstrap/wire.h"

using namespace sieve::transport;
using sieve::Status;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const int nranks = 1 + data[0] % 64;
  std::string msg(reinterpret_cast<const char*>(data + 1), size - 1);
  auto* p = reinterpret_cast<const uint8_t*>(msg.data());

  Challenge ch;
  if (ParseChallenge(p, msg.size(), &ch).ok()) FUZZ_CHECK(msg.size() == kChallengeBytes);

  ReplyHeader rh;
  size_t head = msg.size() < kReplyHeaderBytes ? msg.size() : kReplyHeaderBytes;
  if (ParseReplyHeader(p, head, nranks, &rh).ok()) {
    FUZZ_CHECK(head == kReplyHeaderBytes);
    FUZZ_CHECK(rh.kind == ReplyKind::kTable || rh.kind == ReplyKind::kError);
    if (rh.kind == ReplyKind::kError) FUZZ_CHECK(rh.body_len <= kMaxErrorBytes);
    const uint8_t secret[kJobSecretBytes] = {7};
    const uint8_t nonce[kNonceBytes] = {8};
    (void)ReplyMacValid(p, secret, nonce);
  }

  // The table parser on the whole message (as if it were a verified body).
  std::vector<PeerInfo> table;
  if (ParseTable(p, msg.size(), nranks, &table).ok()) {
    FUZZ_CHECK(static_cast<int>(table.size()) == nranks);
    FUZZ_CHECK(EncodeTable(table) == msg);
  }
  return 0;
}
