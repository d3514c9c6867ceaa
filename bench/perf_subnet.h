// sieve-perf's subnet modes: --layout sdp:C (a balanced random SDP layout in
// which each of kSubnets equal blocks is held by about C*nranks ranks) and
// --d2ft P (kSubnets equal subnets held by every rank, each touched by each
// rank with probability P). Both are drawn from a fixed seed, so every rank
// builds the same layout and touched table without talking to the others.
#ifndef SIEVE_BENCH_PERF_SUBNET_H_
#define SIEVE_BENCH_PERF_SUBNET_H_

#include <stddef.h>
#include <stdint.h>

#include <vector>

#include "sieve.h"

namespace sieve {
namespace perf {

constexpr int kSubnets = 64;

struct SubnetSetup {
  std::vector<size_t> offsets;                // kSubnets + 1 boundaries
  std::vector<std::vector<int>> holders;      // per subnet, ascending
  std::vector<std::vector<uint8_t>> touched;  // D2FT: [rank][subnet]; empty for SDP

  bool d2ft() const { return !touched.empty(); }
  // The ranks whose average subnet k receives (holders, or D2FT contributors).
  std::vector<int> Contributors(size_t k) const;
  // Rank r's touched bitmap (bit k of byte k/8).
  std::vector<unsigned char> Bitmap(int rank) const;
  // Bytes rank r sends per call with a ring among each group's contributors
  // and the fan-out to non-contributing holders (the library's plan), plus
  // the D2FT bitmap all-gather. The max over ranks is the ideal of bytes/rank.
  double IdealBytesSent(int rank, int nranks, size_t type_size) const;
};

// Each block gets floor or ceil of coverage*nranks holders (mean coverage*nranks,
// at least 1), the least loaded ranks so far with random tie-breaks: every
// rank ends up holding about coverage of the model.
SubnetSetup SdpSetup(size_t count, int nranks, double coverage, uint64_t seed);
SubnetSetup D2ftSetup(size_t count, int nranks, double p, uint64_t seed);

// Registers the setup's layout on comm (collective).
sieveResult_t RegisterSetup(sieveComm_t comm, size_t count, const SubnetSetup& setup,
                            sieveLayout_t* layout);

}  // namespace perf
}  // namespace sieve

#endif  // SIEVE_BENCH_PERF_SUBNET_H_
