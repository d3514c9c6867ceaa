// Fuzzes the per-collective control messages every rank receives from every peer: the
// fingerprint (mismatch detection) and the verdict (agreement on failure). A decoded message
// re-encodes to one that decodes the same, and describing or diffing it stays in bounds.
#include <string>

#include "algo/op_header.h"
#include "fuzz_check.h"

using namespace sieve::algo;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  uint32_t seq = 0;
  OpFingerprint fp;
  if (DecodeFingerprint(data, size, &seq, &fp)) {
    FUZZ_CHECK(size == kFingerprintBytes);
    uint8_t again[kFingerprintBytes];
    EncodeFingerprint(seq, fp, again);
    uint32_t seq2 = 0;
    OpFingerprint fp2;
    FUZZ_CHECK(DecodeFingerprint(again, sizeof(again), &seq2, &fp2));
    FUZZ_CHECK(seq2 == seq && fp2 == fp);
    std::string text = DescribeFingerprint(fp);
    FUZZ_CHECK(!text.empty());
    OpFingerprint other;  // the defaults: an all-reduce with no type
    (void)FingerprintDiff(fp, other, 3);
    FUZZ_CHECK(FingerprintDiff(fp, fp, 1).empty());
  }
  bool ok = false;
  if (DecodeVerdict(data, size, &seq, &ok)) {
    FUZZ_CHECK(size == kVerdictBytes);
    uint8_t again[kVerdictBytes];
    EncodeVerdict(seq, ok, again);
    uint32_t seq2 = 0;
    bool ok2 = !ok;
    FUZZ_CHECK(DecodeVerdict(again, sizeof(again), &seq2, &ok2) && seq2 == seq && ok2 == ok);
  }
  return 0;
}
