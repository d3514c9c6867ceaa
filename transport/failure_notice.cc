// Failure notice bodies: encoding, decoding, keeping the earliest.
#include "transport/failure_notice.h"

#include "core/log.h"

namespace sieve::transport {

std::string EncodeNotice(uint32_t first_failed_seq, int rank, const std::string& what) {
  std::string text(4, '\0');
  for (int i = 0; i < 4; ++i) text[i] = static_cast<char>(first_failed_seq >> (8 * i));
  text += StrFormat("rank %d failed %s", rank, what.c_str());
  if (text.size() >= kNoticeBytes) text.resize(kNoticeBytes - 1);
  return text;
}

void TakeNotice(const char* body, size_t len, Transport::Notice* earliest) {
  if (len > kNoticeBytes - 1) len = kNoticeBytes - 1;
  const auto* b = reinterpret_cast<const unsigned char*>(body);
  uint32_t seq = 0;
  if (len >= 4) seq = b[0] | (b[1] << 8) | (b[2] << 16) | (static_cast<uint32_t>(b[3]) << 24);
  std::string text = len > 4 ? std::string(body + 4, len - 4) : "";
  if (text.empty()) text = "a peer reported a failure";
  SIEVE_INFO(kLogNet, "failure notice (collectives from #%u): %s", seq, text.c_str());
  if (!earliest->received || static_cast<int32_t>(seq - earliest->first_failed_seq) < 0) {
    earliest->received = true;
    earliest->first_failed_seq = seq;
    earliest->text = text;
  }
}

}  // namespace sieve::transport
