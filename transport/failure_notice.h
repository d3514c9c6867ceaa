// The body of a failure notice (tag.h: NoticeTag), the same on every
// transport: the sender's first failed collective sequence number (4 bytes,
// little-endian), then the reason as text.
#ifndef SIEVE_TRANSPORT_FAILURE_NOTICE_H_
#define SIEVE_TRANSPORT_FAILURE_NOTICE_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "transport/transport.h"

namespace sieve::transport {

// Receives of notices are posted with this many bytes (longer ones are cut).
constexpr size_t kNoticeBytes = 512;

// "rank R failed <what>" after the sequence number, cut to kNoticeBytes - 1.
std::string EncodeNotice(uint32_t first_failed_seq, int rank, const std::string& what);

// Folds a received body into *earliest: it replaces it unless *earliest
// already holds a notice about an earlier collective. Logs it at INFO.
void TakeNotice(const char* body, size_t len, Transport::Notice* earliest);

}  // namespace sieve::transport

#endif  // SIEVE_TRANSPORT_FAILURE_NOTICE_H_
