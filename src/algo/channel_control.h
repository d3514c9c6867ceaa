// Internal to Channel: the per-collective control messages in flight (our
// fingerprint and verdict sends, every peer's fingerprint and verdict receives).
#ifndef SIEVE_ALGO_CHANNEL_CONTROL_H_
#define SIEVE_ALGO_CHANNEL_CONTROL_H_

#include <array>
#include <deque>
#include <vector>

#include "algo/channel.h"

namespace sieve::algo {

struct Channel::Control {
  OpControl spec;
  uint8_t fingerprint[kFingerprintBytes] = {};
  uint8_t verdict[kVerdictBytes] = {};
  bool verdict_sent = false;
  // Per peer (index = rank; unused at our own rank).
  std::vector<std::array<uint8_t, kFingerprintBytes>> peer_fingerprint;
  std::vector<std::array<uint8_t, kVerdictBytes>> peer_verdict;
  std::vector<transport::Request*> fingerprint_recv, verdict_recv;
  std::vector<transport::Request*> sends;
  std::deque<transport::Request> requests;  // stable addresses for the transport
};

}  // namespace sieve::algo

#endif  // SIEVE_ALGO_CHANNEL_CONTROL_H_
