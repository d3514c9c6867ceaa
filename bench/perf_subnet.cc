// Layout and touched-table generation for sieve-perf's subnet modes, and the
// bytes the library's plan sends (for the ideal printed beside the table).
#include "perf_subnet.h"

#include <algorithm>
#include <map>
#include <random>

namespace sieve {
namespace perf {
namespace {

std::vector<size_t> EqualOffsets(size_t count) {
  std::vector<size_t> offsets(kSubnets + 1);
  const size_t size = count / kSubnets;
  for (int k = 0; k < kSubnets; ++k) offsets[k] = size * static_cast<size_t>(k);
  offsets[kSubnets] = count;
  return offsets;
}

}  // namespace

std::vector<int> SubnetSetup::Contributors(size_t k) const {
  if (!d2ft()) return holders[k];
  std::vector<int> out;
  for (size_t r = 0; r < touched.size(); ++r)
    if (touched[r][k]) out.push_back(static_cast<int>(r));
  return out;
}

std::vector<unsigned char> SubnetSetup::Bitmap(int rank) const {
  std::vector<unsigned char> bits((holders.size() + 7) / 8, 0);
  for (size_t k = 0; k < holders.size(); ++k)
    if (d2ft() && touched[rank][k]) bits[k / 8] |= static_cast<unsigned char>(1u << (k % 8));
  return bits;
}

double SubnetSetup::IdealBytesSent(int rank, int nranks, size_t type_size) const {
  // Elements per (contributors, receivers) group, as the library groups them.
  std::map<std::pair<std::vector<int>, std::vector<int>>, size_t> groups;
  for (size_t k = 0; k < holders.size(); ++k) {
    std::vector<int> t = Contributors(k), q;
    if (t.empty()) continue;
    for (int r : holders[k])
      if (!std::binary_search(t.begin(), t.end(), r)) q.push_back(r);
    groups[{t, q}] += offsets[k + 1] - offsets[k];
  }
  double sent = d2ft() ? static_cast<double>((nranks - 1) * ((holders.size() + 7) / 8)) : 0;
  for (const auto& g : groups) {
    const std::vector<int>& t = g.first.first;
    auto it = std::find(t.begin(), t.end(), rank);
    if (it == t.end()) continue;
    const double k = static_cast<double>(t.size()), s = static_cast<double>(g.second) * type_size;
    sent += 2 * (k - 1) / k * s + s / k * static_cast<double>(g.first.second.size());
  }
  return sent;
}

SubnetSetup SdpSetup(size_t count, int nranks, double coverage, uint64_t seed) {
  SubnetSetup s;
  s.offsets = EqualOffsets(count);
  std::mt19937_64 rng(seed);
  const double want = std::max(1.0, std::min<double>(nranks, coverage * nranks));
  std::vector<size_t> load(static_cast<size_t>(nranks), 0);
  for (int k = 0; k < kSubnets; ++k) {
    int holders = static_cast<int>(want);
    if (std::uniform_real_distribution<double>(0, 1)(rng) < want - holders) ++holders;
    std::vector<int> order(static_cast<size_t>(nranks));
    for (int r = 0; r < nranks; ++r) order[r] = r;
    std::shuffle(order.begin(), order.end(), rng);
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return load[a] < load[b]; });
    std::vector<int> chosen(order.begin(), order.begin() + holders);
    std::sort(chosen.begin(), chosen.end());
    for (int r : chosen) load[r] += s.offsets[k + 1] - s.offsets[k];
    s.holders.push_back(chosen);
  }
  return s;
}

SubnetSetup D2ftSetup(size_t count, int nranks, double p, uint64_t seed) {
  SubnetSetup s;
  s.offsets = EqualOffsets(count);
  std::mt19937_64 rng(seed);
  std::vector<int> everyone(static_cast<size_t>(nranks));
  for (int r = 0; r < nranks; ++r) everyone[r] = r;
  s.holders.assign(kSubnets, everyone);
  s.touched.assign(static_cast<size_t>(nranks), std::vector<uint8_t>(kSubnets, 0));
  for (int r = 0; r < nranks; ++r)
    for (int k = 0; k < kSubnets; ++k)
      s.touched[r][k] = std::uniform_real_distribution<double>(0, 1)(rng) < p ? 1 : 0;
  return s;
}

sieveResult_t RegisterSetup(sieveComm_t comm, size_t count, const SubnetSetup& setup,
                            sieveLayout_t* layout) {
  std::vector<sieveSegment_t> segs;
  for (size_t k = 0; k < setup.holders.size(); ++k)
    segs.push_back({setup.offsets[k], setup.offsets[k + 1] - setup.offsets[k],
                    setup.holders[k].data(), static_cast<int>(setup.holders[k].size())});
  return sieveLayoutRegister(comm, count, segs.data(), static_cast<int>(segs.size()), layout);
}

}  // namespace perf
}  // namespace sieve
