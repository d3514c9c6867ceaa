// Fuzzes the unique id: the 128-byte binary decoder (what sieveCommInitRank and the NCCL shim
// accept) and the 256-hex-digit text form (SIEVE_UNIQUE_ID, sieveUniqueIdFromString). Decoding
// accepts only canonical ids, so a decoded id re-encodes to the same bytes.
#include <cctype>
#include <cstring>
#include <string>

#include "fuzz_check.h"
#include "transport/bootstrap/unique_id.h"

using namespace sieve::transport;
using sieve::Status;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  char id[kUniqueIdBytes] = {};
  if (size > 0) std::memcpy(id, data, size < kUniqueIdBytes ? size : kUniqueIdBytes);
  UniqueId uid;
  if (DecodeUniqueId(id, &uid).ok()) {
    char again[kUniqueIdBytes];
    EncodeUniqueId(uid, again);
    FUZZ_CHECK(std::memcmp(id, again, kUniqueIdBytes) == 0);
  }
  std::string text(reinterpret_cast<const char*>(data), size);
  char parsed[kUniqueIdBytes];
  if (IdFromHex(text, parsed).ok()) {
    std::string lower = text;
    for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    FUZZ_CHECK(IdToHex(parsed) == lower);
  }
  return 0;
}
